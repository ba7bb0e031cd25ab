#!/usr/bin/env bash
# End-to-end pipeline scaling: wall time and peak RSS of the control pipeline (all
# stages, Parquet, report; prism in-process, file:// output, pure-Go GoMLX) against
# the targets of the vectorised-training work:
#   - 10,000 tables end to end                     ≤ 30 s wall
#   - 10k → 100k tables                             ≤ 11× wall
#   - N = 100 vs N = 100,000 (training, no sample files) within 1.3× wall
#   - peak RSS at 100,000 tables, and that it does not grow with N
#
#   scripts/bench-pipeline.sh            # all of the above (about 3 minutes on 2 cores)
#   TABLES=10000 scripts/bench-pipeline.sh   # the 10k/N rows only
#
# The binary is built first, so compile time is not counted. Outputs go to a temporary
# directory that is removed at the end. Needs GNU time (/usr/bin/time) for RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}" # the AVX-512 build of the training kernels, as the README builds
big=${TABLES:-100000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[[ -x /usr/bin/time ]] || { echo "bench-pipeline: needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }

go build -o "$tmp/control" ./pipelines/control

declare -A wall rss
measure() { # name, flags...
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$tmp/$name.time" "$tmp/control" --out="$tmp/$name" "$@" >"$tmp/$name.log" 2>&1 ||
    { echo "bench-pipeline: $name failed:" >&2; tail -20 "$tmp/$name.log" >&2; exit 1; }
  read -r wall[$name] rss[$name] <"$tmp/$name.time"
  rm -rf "${tmp:?}/$name"
  awk -v n="$name" -v w="${wall[$name]}" -v r="${rss[$name]}" -v f="$*" \
    'BEGIN { printf "%-22s %8.2f s  %7.0f MB  %s\n", n, w, r/1024, f }'
}

echo "== control pipeline, end to end =="
measure t10k --tables=10000
[[ "$big" != 10000 ]] && measure "t${big}" --tables="$big"
measure t10k-N100 --tables=10000 --samples=100 --write_samples=false
measure t10k-N100000 --tables=10000 --samples=100000 --write_samples=false
if [[ "$big" != 10000 ]]; then
  measure "t${big}-N100" --tables="$big" --samples=100 --write_samples=false
  measure "t${big}-N100000" --tables="$big" --samples=100000 --write_samples=false
fi

echo "== against the targets =="
awk -v w="${wall[t10k]}" 'BEGIN { printf "10k tables end to end: %.2f s (target <= 30 s)\n", w }'
if [[ "$big" != 10000 ]]; then
  awk -v a="${wall[t10k]}" -v b="${wall[t$big]}" -v n="$big" \
    'BEGIN { printf "10k -> %d tables: %.2fx wall (target <= %.1fx)\n", n, b/a, 1.1*n/10000 }'
fi
awk -v a="${wall[t10k-N100]}" -v b="${wall[t10k-N100000]}" \
  'BEGIN { printf "N=100 -> N=100000 (10k tables): %.2fx wall (target <= 1.3x)\n", b/a }'
if [[ "$big" != 10000 ]]; then
  awk -v a="${rss[t$big-N100]}" -v b="${rss[t$big-N100000]}" -v n="$big" \
    'BEGIN { printf "peak RSS at %d tables: %.0f MB at N=100, %.0f MB at N=100000 (%.2fx)\n", n, a/1024, b/1024, b/a }'
fi
