#!/usr/bin/env bash
# The whole-pipeline throughput on joint tables (issue 20), measured in one run:
# jemcheck's control pipeline end to end on T tables (default 100,000), jem only, no
# sample files (GenerateTables → SampleDatasets → Train → Evaluate → WriteResults,
# Aggregate → Report → Publish, as the user runs it), in jem runs per wall second,
# against the PyTorch peer's training alone (../shared/peers/torch_control.py --mode
# counts, one thread: its jem runs_per_s). Target: jemcheck end to end ≥ 2× the peer's
# training.
#
#   scripts/bench-throughput.sh               # about half a minute on 2 cores
#   TABLES=20000 scripts/bench-throughput.sh  # a quicker look
#
# Needs GNU time; the peer needs /usr/bin/python3 with torch (Debian: apt-get install -y
# python3-torch); without it the peer row is skipped. Wall times drift on a shared
# machine: compare the two rows of one run, not rows of different runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}" # the AVX-512 build of the training kernels, as the README builds
tables=${TABLES:-100000}
peer=${PEER:-../shared/peers/torch_control.py}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-throughput.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v /usr/bin/time >/dev/null || { echo "bench-throughput: needs /usr/bin/time (GNU time)" >&2; exit 2; }
go build -o "$tmp/" ./pipelines/control
echo "== jem runs per second, $tables tables (2×2, N=1000, 300 steps) =="
/usr/bin/time -f "%U %S %M %e" -o "$tmp/jemcheck.time" \
  "$tmp/control" --tables="$tables" --methods=jem --write_samples=false --out="$tmp/j" >"$tmp/jemcheck.log" 2>&1 ||
  { echo "bench-throughput: jemcheck failed:" >&2; tail -20 "$tmp/jemcheck.log" >&2; exit 1; }
read -r juser jsys jrss jwall <"$tmp/jemcheck.time"
jrate=$(awk -v t="$tables" -v w="$jwall" 'BEGIN { printf "%.0f", t / w }')
printf '%-32s %8s jem runs/s  (wall %6s s, cpu %6.2f s, peak RSS %4d MB)\n' "jemcheck end to end" "$jrate" "$jwall" \
  "$(awk -v u="$juser" -v s="$jsys" 'BEGIN { print u + s }')" $((jrss / 1024))
if /usr/bin/python3 -c 'import torch' 2>/dev/null && [[ -f $peer ]]; then
  OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 /usr/bin/python3 "$peer" --mode counts --tables="$tables" --threads 1 >"$tmp/peer.log" 2>&1 ||
    { echo "bench-throughput: peer failed:" >&2; tail -20 "$tmp/peer.log" >&2; exit 1; }
  prate=$(awk '/method=jem/ { for (i = 1; i <= NF; i++) if ($i ~ /^runs_per_s=/) { sub(/^runs_per_s=/, "", $i); print $i } }' "$tmp/peer.log")
  [[ -n $prate ]] || { echo "bench-throughput: no jem runs_per_s in the peer's output:" >&2; cat "$tmp/peer.log" >&2; exit 1; }
  printf '%-32s %8.0f jem runs/s  (one thread, training alone)\n' "peer torch_control.py counts" "$prate"
  awk -v j="$jrate" -v p="$prate" 'BEGIN { printf "jemcheck end to end / peer training: %.2f× (target ≥ 2×)\n", j / p }'
else
  echo "peer skipped: /usr/bin/python3 lacks torch, or $peer is missing"
fi
