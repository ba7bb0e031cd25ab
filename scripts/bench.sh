#!/usr/bin/env bash
# Training throughput against the peers, in one invocation on one machine, one core:
# this project's vectorised GoMLX training (scripts/benchtrain) and the PyTorch
# "counts" peer (../shared/peers/torch_control.py --mode counts --threads 1) on the
# standard sweep (2×2 uniform tables, N=1000, linear, 300 full-batch Adam steps,
# lr 0.05). Prints runs/s for baseline and JEM and the ratio jemcheck/PyTorch.
#
#   scripts/bench.sh [TABLES]        (default 10000)
#
# Installs python3-torch and python3-numpy from Debian when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}" # the AVX-512 build of the training kernels, as the README builds
tables=${1:-10000}
peers=${PEERS:-../shared/peers}
py=/usr/bin/python3

if ! $py -c 'import torch, numpy' 2>/dev/null; then
  echo "bench: installing python3-torch python3-numpy (Debian)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q python3-torch python3-numpy >&2
  else sudo apt-get install -y -q python3-torch python3-numpy >&2; fi
fi

go build -o bin/benchtrain ./scripts/benchtrain
pin() { if command -v taskset >/dev/null; then taskset -c 0 "$@"; else "$@"; fi; }

echo "== jemcheck (GoMLX pure Go, GOMAXPROCS=1, 1 core) =="
go_out=$(GOMAXPROCS=1 pin bin/benchtrain --tables="$tables")
echo "$go_out"
echo "== PyTorch peer, counts mode, 1 thread =="
pt_out=$(OMP_NUM_THREADS=1 pin $py "$peers/torch_control.py" --mode counts --threads 1 --tables "$tables")
echo "$pt_out"

rate() { grep -E "$1" | sed -E 's/.*runs_per_s=([0-9.]+).*/\1/' | head -1; }
echo "== ratio jemcheck / PyTorch counts (runs/s, same machine, same run) =="
for m in baseline jem; do
  g=$(echo "$go_out" | rate "method=$m ")
  p=$(echo "$pt_out" | rate "method=$m ")
  awk -v m="$m" -v g="$g" -v p="$p" 'BEGIN { printf "%-8s jemcheck %9.1f runs/s  pytorch %9.1f runs/s  ratio %.2fx\n", m, g, p, g/p }'
done
