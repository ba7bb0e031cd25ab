#!/usr/bin/env bash
# The 2-D recipes (sgld, mala, jarzynski, ed, shortrun, exact jem, nce, tre, dsm, snl, drl
# at their defaults, set by their plane hooks): the Go kernels' Train2D against the stacked
# PyTorch peer scripts/peers/torch_methods.py, in one run on one core (taskset -c ${CORE:-0},
# GOMAXPROCS=1, OMP_NUM_THREADS=1), in CPU milliseconds per run-step of the same shape
# (gmm:3,2, MLP 2-32-32-3 tanh, batch 64, 20 sampler steps, 256 runs; see
# BenchmarkRecipes2D in methods/all/bench_test.go):
#
#   scripts/bench-recipes.sh            (about 4 minutes on 2 cores, most of it compiling)
#   CORE=1 scripts/bench-recipes.sh     (pin to core 1 instead of core 0)
#
# Needs /usr/bin/python3 with torch and numpy (Debian python3-torch python3-numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-recipes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
$py -c 'import torch, numpy' 2>/dev/null || { echo "bench-recipes: needs python3-torch python3-numpy" >&2; exit 2; }
pin() { if command -v taskset >/dev/null; then taskset -c "${CORE:-0}" "$@"; else "$@"; fi; }
export GOMAXPROCS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

echo "== building (GOEXPERIMENT=$GOEXPERIMENT) ==" >&2
go test -c -o "$tmp/methods.test" ./methods/all
echo "== Go: BenchmarkRecipes2D ==" >&2
pin "$tmp/methods.test" -test.run '^$' -test.bench '^BenchmarkRecipes2D$' -test.benchtime 1x 2>&1 | grep '^Benchmark' | tee "$tmp/go.txt"
echo "== torch: torch_methods.py --runs 256 --steps 10 ==" >&2
pin $py scripts/peers/torch_methods.py --runs 256 --steps 10 --warmup 3 --threads 1 | tee "$tmp/torch.txt"

echo
echo "=========== summary (one core, CPU ms per run-step; target Go/torch <= 0.5) ==========="
printf "%-10s %10s %10s %10s\n" method go torch go/torch
for m in sgld mala jarzynski ed shortrun jem nce tre dsm snl drl; do
  g=$(awk -v m="BenchmarkRecipes2D/$m" '$1 ~ "^"m"(-[0-9]+)?$" { for (i = 2; i <= NF; i++) if ($i == "ms_cpu/run_step") print $(i-1) }' "$tmp/go.txt")
  t=$(awk -F, -v m="$m" '$1 == m { print $4 }' "$tmp/torch.txt")
  awk -v m="$m" -v g="$g" -v t="$t" 'BEGIN { printf "%-10s %10.3f %10.3f %10.2f\n", m, g, t, g/t }'
done
