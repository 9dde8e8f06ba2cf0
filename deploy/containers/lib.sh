# shellcheck shell=bash disable=SC2034  # its variables are read by the scripts that source it
# Shared by the deploy/containers scripts: Docker and image names. Sourced, never run.
# Builds use Debian's own docker CLI (/usr/bin/docker) with BuildKit: a newer CLI earlier on PATH
# may lack buildx and refuse to build.
# shellcheck source=../local/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../local" && pwd)/lib.sh"
containers_dir="$repo_root/deploy/containers"
export DOCKER_BUILDKIT=1
DOCKER="${DOCKER:-/usr/bin/docker}"
COMPOSE="${COMPOSE:-/usr/bin/docker-compose}"
# Images are tagged with this; the compose files and the Kubernetes test use the same tag.
export IMAGE_TAG="${IMAGE_TAG:-local}"
# The executables that get an image of their own (the Dockerfile's targets).
image_products=(ingest verify enrich grant appstorectl appstore-sim)
# Local stand-ins for the upstream images no registry can give us here.
support_images=(tansu postgres gateway)
# The label deploy/containers/images puts on every image it builds (docker and podman prune by it).
built_by_label="org.appstore-entitlements.built-by=deploy/containers/images"

docker() { "$DOCKER" "$@"; }
# docker_answers: true when a Docker daemon answers the CLI.
docker_answers() { "$DOCKER" info >/dev/null 2>&1; }

# ensure_dockerd: starts dockerd when none answers (there is no systemd here) and records that
# this checkout started it, so that only the daemon we started is ever stopped (stop_dockerd).
ensure_dockerd() {
  [[ -x "$DOCKER" ]] || die "Debian's docker CLI ($DOCKER) is missing: run deploy/local/setup"
  if docker_answers; then return; fi
  command -v dockerd >/dev/null || die "dockerd is missing: run deploy/local/setup"
  mkdir -p "$state_dir/logs"
  log "starting dockerd (log: $state_dir/logs/dockerd.log)"
  setsid dockerd >>"$state_dir/logs/dockerd.log" 2>&1 </dev/null &
  echo $! >"$state_dir/dockerd.pid"
  wait_until 60 0.5 docker_answers || die "dockerd did not answer within 60 s (see $state_dir/logs/dockerd.log)"
}

# stop_dockerd: stops dockerd only when this checkout started it (SIGTERM, up to 30 s, never SIGKILL).
stop_dockerd() { stop_pidfile "$state_dir/dockerd.pid" dockerd 300 nokill; }
