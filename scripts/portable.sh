#!/usr/bin/env bash
# Runs a jemcheck pipeline through Beam's portable (universal) runner against a
# standalone Prism job server: the pipeline is submitted over the Job API and every
# element is encoded, as on Flink, Spark or Dataflow, while the SDK harness stays in
# the launching process (LOOPBACK environment). Catches portability bugs that the
# in-process default (prism in-process) can hide.
#
#   scripts/portable.sh control --tables=20 --out=./out/portable-control
#   scripts/portable.sh sweep --spec=sweeps/smoke.yaml --out=./out/portable-smoke
#   scripts/portable.sh regress --tables=200 --out=./out/portable-regress
#
# The first argument is a directory under pipelines/; the others go to the pipeline
# after --runner=universal --endpoint=localhost:PORT --environment_type=LOOPBACK.
# The script exits with the pipeline's status (regress: 1 = claim fails).
#
# Environment:
#   PRISM_WAIT      seconds to wait for the job server to listen (default 60)
#   PRISM_IDLE      prism's --idle_shutdown_timeout, a safety net should this script
#                   be killed without running its exit trap (default 15m)
#   PRISM_WEB_PORT  also serve prism's web UI (per-stage counters) on this port
#   PRISM_LOG       prism's log file (default: a temporary file, shown on failure)
#   PRISM_BIN       where to build prism (default ./bin/prism)
#
# Prism is built into $PRISM_BIN (default ./bin/prism; the tests build it in a temporary
# folder) from the Beam module go.mod pins. It listens on
# every interface (prism binds ":PORT"; there is no flag to restrict it); the script
# itself only talks to localhost, and the server lives only as long as the run.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}" # the AVX-512 build of the training kernels, as the README builds

die() { echo "portable.sh: $*" >&2; exit 2; }

if [[ $# -lt 1 || "$1" == -* ]]; then
  names=()
  for d in pipelines/*/main.go; do names+=("$(basename "$(dirname "$d")")"); done
  die "usage: scripts/portable.sh PIPELINE [pipeline flags...]  (PIPELINE: ${names[*]})"
fi
pipeline="$1"
shift
[[ "$pipeline" =~ ^[a-z0-9_]+$ && -f "pipelines/$pipeline/main.go" ]] || die "no pipeline pipelines/$pipeline"
wait_s="${PRISM_WAIT:-60}"
[[ "$wait_s" =~ ^[1-9][0-9]*$ ]] || die "PRISM_WAIT must be a positive number of seconds"
command -v go >/dev/null || die "Go is not installed"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-portable.XXXXXX")"
log="${PRISM_LOG:-$tmp/prism.log}"
prism_pid=""
child=""

# shellcheck disable=SC2317 # cleanup runs from the EXIT trap
cleanup() {
  local rc=$?
  if [[ -n "$child" ]]; then
    kill "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  if [[ -n "$prism_pid" ]] && kill -0 "$prism_pid" 2>/dev/null; then
    kill "$prism_pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$prism_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -9 "$prism_pid" 2>/dev/null || true
    wait "$prism_pid" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && -s "$log" ]]; then
    echo "portable.sh: last lines of the prism log ($log):" >&2
    tail -n 30 "$log" >&2 || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_child runs a command in the background and waits for it, so that INT/TERM
# reach the traps at once (bash defers traps while a foreground command runs) and
# cleanup can stop the command.
run_child() {
  "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return "$rc"
}

# Build first, so that compile time never counts against the waits below.
echo "portable.sh: building prism and pipelines/$pipeline" >&2
mkdir -p bin
prism_bin="${PRISM_BIN:-bin/prism}"
run_child go build -o "$prism_bin" github.com/apache/beam/sdks/v2/go/cmd/prism
run_child go build -o "$tmp/$pipeline" "./pipelines/$pipeline"

web_flags=(--serve_http=false)
if [[ -n "${PRISM_WEB_PORT:-}" ]]; then
  [[ "$PRISM_WEB_PORT" =~ ^[0-9]+$ ]] || die "PRISM_WEB_PORT must be a port number"
  web_flags=(--serve_http=true "--web_port=$PRISM_WEB_PORT")
fi
# --job_port=0: the kernel picks a free port; prism logs it as endpoint=localhost:PORT.
"$prism_bin" --job_port=0 "${web_flags[@]}" --idle_shutdown_timeout="${PRISM_IDLE:-15m}" \
  --log_kind=text --log_level=info >"$log" 2>&1 &
prism_pid=$!

port=""
deadline=$((SECONDS + wait_s))
while [[ -z "$port" ]]; do
  kill -0 "$prism_pid" 2>/dev/null || die "prism exited before listening"
  port="$(grep -o 'endpoint=localhost:[0-9]*' "$log" 2>/dev/null | head -n 1 | cut -d: -f2 || true)"
  [[ -n "$port" ]] && break
  ((SECONDS < deadline)) || die "prism did not report its port within ${wait_s}s"
  sleep 0.2
done
# Wait until the port accepts connections (bash's /dev/tcp, loopback only).
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  kill -0 "$prism_pid" 2>/dev/null || die "prism exited before accepting connections"
  ((SECONDS < deadline)) || die "prism did not accept connections on localhost:$port within ${wait_s}s"
  sleep 0.2
done
echo "portable.sh: prism job server on localhost:$port (pid $prism_pid, log $log)" >&2
if [[ -n "${PRISM_WEB_PORT:-}" ]]; then
  echo "portable.sh: prism web UI on http://localhost:$PRISM_WEB_PORT" >&2
fi

rc=0
run_child "$tmp/$pipeline" --runner=universal --endpoint="localhost:$port" --environment_type=LOOPBACK "$@" || rc=$?
exit "$rc"
