#!/usr/bin/env bash
# Go (models/cnn on GoMLX, SimpleGo backend) vs PyTorch, one thread each, same CNN
# training step: cnn:16,32 on 16x16x1, K=10, batch 64, Adam. Prints ms/step and the
# Go/torch ratio for: baseline (CE step), sgld-step (forward + input gradient of LSE),
# jem-sgld20 (a JEM step with 20 SGLD steps); Go with the hand backward pass (default)
# and with GoMLX autodiff.
#   usage: scripts/bench-cnn.sh [N]   (N timed steps per case, default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
export GOEXPERIMENT=simd
go_out=$(GOMAXPROCS=1 go test -run '^$' -bench 'BenchmarkCNN' -benchtime "${N}x" ./models/cnn/)
torch_out=$(/usr/bin/python3 scripts/peers/torch_cnn.py "$N" 2>/dev/null)
echo "# one thread; cnn:16,32, S=16, K=10, batch 64; $(grep '^cpu:' <<<"$go_out" || true)"
printf '%-12s %14s %14s %10s %16s %10s\n' case go_hand_ms torch_ms ratio go_autodiff_ms ratio
for c in baseline sgld-step jem-sgld20; do
  gh=$(awk -v c="BenchmarkCNN/$c/hand" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  ga=$(awk -v c="BenchmarkCNN/$c/autodiff" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  t=$(awk -v c="$c" '$1==c {print $2}' <<<"$torch_out")
  printf '%-12s %14s %14s %10s %16s %10s\n' "$c" "$gh" "$t" \
    "$(awk -v a="$gh" -v b="$t" 'BEGIN{printf "%.1fx", a/b}')" "$ga" \
    "$(awk -v a="$ga" -v b="$t" 'BEGIN{printf "%.1fx", a/b}')"
done
