#!/usr/bin/env bash
# SGLD-JEM on 2-D Gaussian mixtures (issue 9): the Go kernels' Train2D against the stacked
# PyTorch peer ../shared/peers/torch_sgld.py, in one run on one core (taskset -c 0,
# GOMAXPROCS=1, OMP_NUM_THREADS=1), in CPU milliseconds per run-step:
#
#   - Go: BenchmarkSGLDPlane (methods/all/bench_test.go): gmm:3,2, MLP 2-32-32-3 tanh, data
#     batch 64, 64 negatives from a 10000-chain replay buffer per run (5% restarts), 20 SGLD
#     steps (lr 1, std 0.01), Adam, 1,024 runs x 10 steps (per-run setup included);
#   - torch: torch_sgld.py --runs 1024 --steps 10 (same shape, swish, torch.bmm, autograd);
#   - exact grid JEM's cost per run-step at training grids 64, 32, 16 and the baseline
#     (BenchmarkJEM2D, models/kernel/bench2d_test.go).
#
#   scripts/bench-sgld.sh            (about 2 minutes on 2 cores, most of it compiling)
#
# Needs /usr/bin/python3 with torch and numpy (Debian python3-torch python3-numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
peers=${PEERS:-../shared/peers}
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-sgldbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
$py -c 'import torch, numpy' 2>/dev/null || { echo "bench-sgld: needs python3-torch python3-numpy" >&2; exit 2; }
pin() { if command -v taskset >/dev/null; then taskset -c 0 "$@"; else "$@"; fi; }
export GOMAXPROCS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

echo "== building (GOEXPERIMENT=$GOEXPERIMENT) ==" >&2
go test -c -o "$tmp/kernel.test" ./models/kernel
go test -c -o "$tmp/methods.test" ./methods/all

metric() { # unit -> the value before unit on stdin's first matching line
  awk -v u="$1" '{ for (i = 2; i <= NF; i++) if ($i == u) { print $(i-1); exit } }'
}

echo "== Go: BenchmarkSGLDPlane, BenchmarkJEM2D ==" >&2
go_sg=$(pin "$tmp/methods.test" -test.run '^$' -test.bench 'SGLDPlane$' -test.benchtime 1x 2>&1 | grep '^Benchmark')
go_jem=$(pin "$tmp/kernel.test" -test.run '^$' -test.bench 'JEM2D' -test.benchtime 1x 2>&1 | grep '^Benchmark')
echo "$go_sg"
echo "$go_jem"
echo "== torch: torch_sgld.py --runs 1024 --steps 10 ==" >&2
torch_sg=$(pin $py "$peers/torch_sgld.py" --runs 1024 --steps 10 --threads 1)
echo "$torch_sg"

g=$(echo "$go_sg" | metric ms_cpu/run_step)
t=$(echo "$torch_sg" | sed -E 's/.*ms_cpu_per_run_step=([0-9.]+).*/\1/')
echo
echo "=================== summary (one core, CPU ms per run-step) ==================="
awk -v g="$g" -v t="$t" -v e="$GOEXPERIMENT" 'BEGIN {
  printf "SGLD-JEM (gmm:3,2, 2-32-32-3, batch 64, 20 SGLD steps, 1024 runs): Go kernel (GOEXPERIMENT=%s) %.3f | torch_sgld.py %.3f | torch / Go = %.2fx (target >= 2)\n", e, g, t, t/g }'
for gr in 64 32 16; do
  printf "exact grid JEM, training grid %sx%s: %s ms CPU per run-step\n" "$gr" "$gr" "$(echo "$go_jem" | grep "grid=$gr " | metric ms_cpu/run_step)"
done
printf "baseline (cross-entropy): %s ms CPU per run-step\n" "$(echo "$go_jem" | grep 'baseline' | metric ms_cpu/run_step)"
