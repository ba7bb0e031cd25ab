#!/usr/bin/env bash
# The end-to-end targets of the block redesign (issue 11), measured in one run:
#   - one core, T tables (default 50,000) × {baseline, jem}, no sample files: jemcheck's
#     CPU seconds against the numpy/PyTorch peer ../shared/peers/torch_e2e.py (target ≤ 0.5×);
#   - peak RSS of regress at 20,000 and 200,000 tables (targets: ≤ 800 MB at 200k and
#     ≤ 2× the 20k peak).
#
#   scripts/bench-e2e.sh                 # about 2 minutes on 2 cores
#   TABLES=100000 scripts/bench-e2e.sh   # a larger end-to-end comparison
#
# Needs GNU time and taskset; the peer needs /usr/bin/python3 with numpy, scipy, pandas
# and torch (Debian: apt-get install -y python3-torch python3-numpy python3-scipy
# python3-pandas python3-matplotlib); without them the peer row is skipped. CPU is user+sys.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}" # the AVX-512 build of the training kernels, as the README builds
tables=${TABLES:-50000}
peer=${PEER:-../shared/peers/torch_e2e.py}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-e2e.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for t in /usr/bin/time taskset; do command -v "$t" >/dev/null || { echo "bench-e2e: needs $t" >&2; exit 2; }; done
go build -o "$tmp/" ./pipelines/control ./pipelines/regress
cpu() { # file written by time -f "%U %S %M %e": prints cpu seconds
  awk '{printf "%.2f", $1 + $2}' "$1"
}
run() { # name, command...
  local name=$1; shift
  /usr/bin/time -f "%U %S %M %e" -o "$tmp/$name.time" "$@" >"$tmp/$name.log" 2>&1 ||
    { [[ $name == regress* ]] || { echo "bench-e2e: $name failed:" >&2; tail -20 "$tmp/$name.log" >&2; exit 1; }; }
}
echo "== end to end, one core, $tables tables × {baseline, jem}, no sample files =="
run jemcheck taskset -c 0 "$tmp/control" --tables="$tables" --methods=baseline,jem --write_samples=false --out="$tmp/j"
read -r _ _ jrss jwall <"$tmp/jemcheck.time"
printf '%-10s cpu %7s s  wall %7s s  peak RSS %5d MB\n' jemcheck "$(cpu "$tmp/jemcheck.time")" "$jwall" $((jrss / 1024))
if /usr/bin/python3 -c 'import torch, numpy, scipy, pandas' 2>/dev/null && [[ -f $peer ]]; then
  OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 run peer taskset -c 0 /usr/bin/python3 "$peer" --tables="$tables" --no_samples --threads=1 --out="$tmp/p"
  read -r _ _ prss pwall <"$tmp/peer.time"
  printf '%-10s cpu %7s s  wall %7s s  peak RSS %5d MB\n' peer "$(cpu "$tmp/peer.time")" "$pwall" $((prss / 1024))
  awk -v j="$(cpu "$tmp/jemcheck.time")" -v p="$(cpu "$tmp/peer.time")" 'BEGIN { printf "jemcheck / peer CPU: %.2f× (target ≤ 0.5×)\n", j / p }'
else
  echo "peer skipped: /usr/bin/python3 lacks torch, numpy, scipy or pandas, or $peer is missing"
fi
echo "== regress peak RSS (both cores, no sample files) =="
for n in 20000 200000; do
  run "regress$n" "$tmp/regress" --tables=$n --write_samples=false --out="$tmp/r$n"
  read -r _ _ rss wall <"$tmp/regress$n.time"
  printf 'regress %7d tables: peak RSS %5d MB, wall %6s s\n' $n $((rss / 1024)) "$wall"
  eval "rss$n=$rss"
done
awk -v a="$rss20000" -v b="$rss200000" 'BEGIN { printf "200k / 20k peak RSS: %.2f× (targets: ≤ 800 MB at 200k, ≤ 2×)\n", b / a }'
