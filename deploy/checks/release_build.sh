#!/usr/bin/env bash
# The release build of every executable the images use (the Dockerfile's PRODUCTS), in the one
# release configuration the images, the benchmarks and this check share (deploy/local/lib.sh:
# -c release --static-swift-stdlib); then each binary must print its usage for --help and exit 0
# and find every shared library it needs. deploy/containers/images copies these very binaries
# into the images. Slow (minutes per product on 2 cores, far more from scratch).
set -euo pipefail
# shellcheck source=../local/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../local" && pwd)/lib.sh"
cd "$repo_root"
passed=0 failed=0  # lib.sh's named checks: ok, fail, finish_checks

products="$(sed -n 's/^ARG PRODUCTS="\(.*\)"$/\1/p' deploy/docker/Dockerfile)"
[[ -n "$products" ]] || { fail "the Dockerfile names its PRODUCTS"; products=""; }
declared="$(python3 -c 'import sys; sys.path.insert(0, "deploy/checks"); from checklib import executable_products; print(" ".join(sorted(executable_products())))')"
bin_dir="$(release_bin_dir)"
start_all=$SECONDS
for product in $products; do
  if ! grep -qw -- "$product" <<<"$declared"; then
    fail "$product: an executable product of Package.swift" "missing executable product: $product"
    continue
  fi
  start=$SECONDS
  log="$(mktemp)"
  if swift build "${release_flags[@]}" --product "$product" >"$log" 2>&1; then
    ok "$product: swift build -c release ($((SECONDS - start)) s)"
  else
    fail "$product: swift build -c release" "$(grep -E 'error:' "$log" | head -5)"
    rm -f "$log"
    continue
  fi
  rm -f "$log"
  set +e
  usage="$("$bin_dir/$product" --help 2>&1)"
  status=$?
  set -e
  if [[ $status -eq 0 ]] && grep -qi '^usage:' <<<"$usage"; then ok "$product --help prints its usage and exits 0"; else
    fail "$product --help" "exit $status: $(head -3 <<<"$usage")"
  fi
  libs="$(ldd "$bin_dir/$product")"
  if grep -q 'not found' <<<"$libs"; then fail "$product: every shared library is found" "$(grep 'not found' <<<"$libs")"; else
    ok "$product: every shared library is found"
  fi
  echo "        needs: $(readelf -d "$bin_dir/$product" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')"
done
echo "release build of ${products}: $((SECONDS - start_all)) s"
finish_checks "deploy release"
