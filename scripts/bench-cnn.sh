#!/usr/bin/env bash
# Go (models/cnn on GoMLX, SimpleGo backend) vs PyTorch, one thread each, same CNN
# training step: cnn:16,32 on 16x16x1, K=10, batch 64, Adam. Prints ms/step and the
# Go/torch ratio for: baseline (CE step), sgld-step (forward + input gradient of LSE),
# jem-sgld20 (a JEM step with 20 SGLD steps); Go with the hand backward pass (default)
# and with GoMLX autodiff. Then Go alone (no torch peer) for the recipes ed4, nce10, dsm.
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
# The sampler-free recipes (models/cnn/recipes.go): Go only, no torch peer. ed4: ED with
# M = 4 negatives (5 images a data point); nce10: NCE with 10 noise draws a point; dsm:
# exact DSM, input gradient plus double backprop (hand only).
for c in ed4 nce10 dsm; do
  gh=$(awk -v c="BenchmarkCNN/$c/hand" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  ga=$(awk -v c="BenchmarkCNN/$c/autodiff" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  printf '%-12s %14s %14s %10s %16s %10s\n' "$c" "$gh" "-" "-" "${ga:--}" "-"
done
