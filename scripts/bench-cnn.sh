#!/usr/bin/env bash
# Go (models/cnn on GoMLX, SimpleGo backend) vs PyTorch, one thread each, same CNN
# training step: cnn:16,32 on 16x16x1, K=10, batch 64, Adam. Prints ms/step and the
# Go/torch ratio for: baseline (CE step), sgld-step (forward + input gradient of LSE),
# jem-sgld20 (a JEM step with 20 SGLD steps); Go with the hand backward pass (default)
# and with GoMLX autodiff. Then Go alone (no torch peer) for the recipes ed4, nce10, dsm.
# Every timed process is pinned to one core (taskset -c $JEMCHECK_BENCH_CPU, default 0,
# where taskset exists).
#
# With JEMCHECK_XLA_PLUGIN naming an XLA CPU PJRT plugin (scripts/xla-cpu.sh prints one),
# it also times the same cases on GoMLX's XLA backend (--backend=xla:PLUGIN; a cgo,
# -tags xla test binary, BenchmarkCNNXLACPU) on the same core, and prints its ms/step and
# its ratio to torch (hand backward pass, and autodiff).
#   usage: scripts/bench-cnn.sh [N]   (N timed steps per case, default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}
export GOEXPERIMENT=simd
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c "${JEMCHECK_BENCH_CPU:-0}"); fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/cnn.test" ./models/cnn/
go_out=$(cd models/cnn && GOMAXPROCS=1 "${pin[@]}" "$tmp/cnn.test" -test.run '^$' -test.bench '^BenchmarkCNN$' -test.benchtime "${N}x")
torch_out=$("${pin[@]}" /usr/bin/python3 scripts/peers/torch_cnn.py "$N" 2>/dev/null)
xla_out=
if [ -n "${JEMCHECK_XLA_PLUGIN:-}" ]; then
  CGO_ENABLED=1 go test -c -tags xla -o "$tmp/cnn-xla.test" ./models/cnn/
  xla_out=$(cd models/cnn && GOMLX_NO_AUTO_INSTALL=1 GOMAXPROCS=1 "${pin[@]}" "$tmp/cnn-xla.test" \
    -test.run '^$' -test.bench '^BenchmarkCNNXLACPU$' -test.benchtime "${N}x")
  grep -q 'ms/step' <<<"$xla_out" || { echo "$xla_out" >&2; echo "bench-cnn: no XLA timings" >&2; exit 1; }
fi
echo "# one core (${pin[*]:-unpinned}), one thread; cnn:16,32, S=16, K=10, batch 64; $(grep '^cpu:' <<<"$go_out" || true)"
[ -z "$xla_out" ] || echo "# xla: ${JEMCHECK_XLA_PLUGIN}"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (a == "" || b == "") print "-"; else printf "%.1fx", a/b}'; }
xla_ms() { awk -v c="BenchmarkCNNXLACPU/$1" '$1 ~ "^"c {for (i = 2; i < NF; i++) if ($(i+1) == "ms/step") printf "%.2f", $i}' <<<"$xla_out"; }
printf '%-12s %14s %14s %10s %16s %10s' case go_hand_ms torch_ms ratio go_autodiff_ms ratio
[ -z "$xla_out" ] && echo || printf ' %12s %10s %16s %10s\n' xla_hand_ms ratio xla_autodiff_ms ratio
for c in baseline sgld-step jem-sgld20; do
  gh=$(awk -v c="BenchmarkCNN/$c/hand" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  ga=$(awk -v c="BenchmarkCNN/$c/autodiff" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  t=$(awk -v c="$c" '$1==c {print $2}' <<<"$torch_out")
  printf '%-12s %14s %14s %10s %16s %10s' "$c" "$gh" "$t" "$(ratio "$gh" "$t")" "$ga" "$(ratio "$ga" "$t")"
  if [ -z "$xla_out" ]; then echo; continue; fi
  xh=$(xla_ms "$c/hand")
  xa=$(xla_ms "$c/autodiff")
  printf ' %12s %10s %16s %10s\n' "${xh:--}" "$(ratio "$xh" "$t")" "${xa:--}" "$(ratio "$xa" "$t")"
done
# The sampler-free recipes (models/cnn/recipes.go): Go only, no torch peer. ed4: ED with
# M = 4 negatives (5 images a data point); nce10: NCE with 10 noise draws a point; dsm:
# exact DSM, input gradient plus double backprop (hand only).
for c in ed4 nce10 dsm; do
  gh=$(awk -v c="BenchmarkCNN/$c/hand" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  ga=$(awk -v c="BenchmarkCNN/$c/autodiff" '$1 ~ "^"c {printf "%.2f", $3/1e6}' <<<"$go_out")
  printf '%-12s %14s %14s %10s %16s %10s\n' "$c" "$gh" "-" "-" "${ga:--}" "-"
done
