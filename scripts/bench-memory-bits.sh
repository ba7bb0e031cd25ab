#!/usr/bin/env bash
# Peak RSS of the binary rung at D = 20 (issue 33 item 8: within 2 GB for 100 tasks),
# with the default --report_tables (3): the report's tasks carry every one of their
# 2^21 cells a run to learned/ and tables.parquet, the other tasks none. One control run
# per task count; the peak should not grow with the tasks.
#
#   scripts/bench-memory-bits.sh                  # 4 and 12 tasks: about 3 minutes on 2 cores
#   TASKS="4 12 100" scripts/bench-memory-bits.sh # the issue's 100 tasks (about 10 minutes more)
#   BIN=/path/to/control scripts/bench-memory-bits.sh   # measure a given build
#
# Needs GNU time. Exits 1 if a run fails or peaks over LIMIT_MB (default 2048).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}" # the AVX-512 build of the training kernels, as the README builds
tasks=${TASKS:-4 12}
limit=${LIMIT_MB:-2048}
methods=${METHODS:-baseline,pcd,ed}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-membits.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v /usr/bin/time >/dev/null || { echo "bench-memory-bits: needs GNU time (/usr/bin/time)" >&2; exit 2; }
bin=${BIN:-}
if [[ -z $bin ]]; then
  go build -o "$tmp/" ./pipelines/control
  bin=$tmp/control
fi
echo "== bits:20,2, methods $methods, default --report_tables: peak RSS (limit $limit MB) =="
status=0
for n in $tasks; do
  if ! /usr/bin/time -f "%M %e" -o "$tmp/$n.time" "$bin" --task=bits:20,2 --tables="$n" --methods="$methods" \
    --out="$tmp/out$n" >"$tmp/$n.log" 2>&1; then
    echo "bench-memory-bits: $n tasks failed:" >&2
    tail -20 "$tmp/$n.log" >&2
    exit 1
  fi
  read -r rss wall <"$tmp/$n.time"
  mb=$((rss / 1024))
  verdict=ok
  if ((mb > limit)); then verdict="OVER $limit MB"; status=1; fi
  printf 'bits:20,2 %4d tasks: peak RSS %5d MB, wall %7s s  %s\n' "$n" "$mb" "$wall" "$verdict"
  rm -rf "$tmp/out$n"
done
exit $status
