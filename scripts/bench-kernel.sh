#!/usr/bin/env bash
# The fused CPU kernels (models/kernel) against GoMLX and the PyTorch peers, in one run on
# one core (taskset -c 0, GOMAXPROCS=1, OMP_NUM_THREADS=1), in CPU seconds:
#
#   1. 2×2 linear JEM, 300 steps: kernel benchmark runs/CPU-s (target ≥ 150,000) against
#      GoMLX (go:ops_sequential) and torch_control.py --mode counts (target ≥ 5×);
#   2. 8×4 one-hot MLP 16,16 tanh, 500 steps, 1,024 JEM runs, whole control process:
#      CPU seconds against the whole torch_mlp.py process (target ≤ 0.5×);
#   3. SGLD-JEM step of an MLP 2-32-32-3, batch 64, 20 SGLD steps: ms CPU per run-step
#      against torch_sgld.py (target ≤ 0.27 ms);
#   4. the single-core float32 peak (an FMA loop, and torch sgemm) beside the kernels'
#      achieved GFLOP/s.
#
# Every Go figure is taken in both builds: "portable" (go build, scalar loops) and
# "simd" (GOEXPERIMENT=simd: simd/archsimd AVX-512); both give the same bits.
#
#   scripts/bench-kernel.sh          (about 10 minutes on 2 cores, most of it compiling)
#
# Needs /usr/bin/python3 with torch and numpy (Debian python3-torch python3-numpy) and
# GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${PEERS:-../shared/peers}
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-kbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[[ -x /usr/bin/time ]] || { echo "bench-kernel: needs /usr/bin/time" >&2; exit 2; }
$py -c 'import torch, numpy' 2>/dev/null || { echo "bench-kernel: needs python3-torch python3-numpy" >&2; exit 2; }
pin() { if command -v taskset >/dev/null; then taskset -c 0 "$@"; else "$@"; fi; }
export GOMAXPROCS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

echo "== building (portable and GOEXPERIMENT=simd) ==" >&2
go test -c -o "$tmp/kernel.portable" ./models/kernel
GOEXPERIMENT=simd go test -c -o "$tmp/kernel.simd" ./models/kernel
go test -c -o "$tmp/models.test" ./models
go build -o "$tmp/control.portable" ./pipelines/control
GOEXPERIMENT=simd go build -o "$tmp/control.simd" ./pipelines/control

metric() { # unit, benchmark output line(s) -> the value before unit
  awk -v u="$1" '{ for (i = 2; i <= NF; i++) if ($i == u) { print $(i-1); exit } }'
}
bench() { # binary, pattern, benchtime
  pin "$1" -test.run '^$' -test.bench "$2" -test.benchtime "$3" 2>&1 | grep '^Benchmark'
}

echo "== 1. 2x2 linear, 300 steps, 4096 runs per call ==" >&2
gomlx_line=$(GOMAXPROCS=1 pin "$tmp/models.test" -test.run '^$' -test.bench 'Train/gomlx/jem/R=4096$' -test.benchtime 3x 2>&1 | grep '^Benchmark')
port_line=$(bench "$tmp/kernel.portable" 'Table2x2/jem' 5x)
simd_line=$(bench "$tmp/kernel.simd" 'Table2x2/jem' 20x)
simd_ce_line=$(bench "$tmp/kernel.simd" 'Table2x2/baseline' 20x)
torch_ctl=$(pin $py "$peers/torch_control.py" --mode counts --threads 1 --tables 10000)
echo "$gomlx_line"; echo "$port_line"; echo "$simd_line"; echo "$simd_ce_line"; echo "$torch_ctl"
g1=$(echo "$gomlx_line" | metric runs/cpu_s)
p1=$(echo "$port_line" | metric runs/cpu_s)
s1=$(echo "$simd_line" | metric runs/cpu_s)
t1=$(echo "$torch_ctl" | grep 'method=jem' | sed -E 's/.*runs_per_s=([0-9.]+).*/\1/')

echo "== 2. 8x4 one-hot MLP 16,16, 500 steps, 1024 JEM runs, whole process ==" >&2
ctl_flags=(--tables=1024 --x_values=8 --classes=4 --x_encoding=onehot --model=mlp:16,16 --steps=500
  --methods=jem --write_samples=false)
cpu_of() { # time file -> user+sys
  awk '{ print $1 + $2 }' "$1"
}
run_ctl() { # name binary backend
  /usr/bin/time -f "%U %S %e" -o "$tmp/$1.time" taskset -c 0 "$2" --out="$tmp/$1" --backend="$3" "${ctl_flags[@]}" >"$tmp/$1.log" 2>&1 ||
    { echo "bench-kernel: control $1 failed" >&2; tail -5 "$tmp/$1.log" >&2; exit 1; }
  cpu_of "$tmp/$1.time"
}
c_gomlx=$(run_ctl gomlx "$tmp/control.portable" go:ops_sequential)
c_port=$(run_ctl portable "$tmp/control.portable" "")
c_simd=$(run_ctl simd "$tmp/control.simd" "")
/usr/bin/time -f "%U %S %e" -o "$tmp/torch_mlp.time" taskset -c 0 $py "$peers/torch_mlp.py" --tables 1024 --steps 500 \
  --x_values 8 --classes 4 --x_encoding onehot --hidden 16,16 --method jem --grad autograd --threads 1 >"$tmp/torch_mlp.log" 2>&1
c_torch=$(cpu_of "$tmp/torch_mlp.time")
grep -h 'verdict\|finished' "$tmp"/{gomlx,portable,simd}.log || true
cat "$tmp/torch_mlp.log"
mlp_port=$(bench "$tmp/kernel.portable" 'TableMLP' 1x)
mlp_simd=$(bench "$tmp/kernel.simd" 'TableMLP' 3x)
echo "$mlp_port"; echo "$mlp_simd"

echo "== 3. SGLD-JEM step, MLP 2-32-32-3, batch 64, 20 SGLD steps ==" >&2
sg_port=$(bench "$tmp/kernel.portable" 'SGLDStep' 20x)
sg_simd=$(bench "$tmp/kernel.simd" 'SGLDStep' 300x)
torch_sg=$(pin $py "$peers/torch_sgld.py" --runs 256 --steps 10 --threads 1)
echo "$sg_port"; echo "$sg_simd"; echo "$torch_sg"
t3=$(echo "$torch_sg" | sed -E 's/.*ms_cpu_per_run_step=([0-9.]+).*/\1/')

echo "== 4. single-core float32 peak ==" >&2
peak=$(bench "$tmp/kernel.simd" 'Peak' 3000x)
echo "$peak"
sgemm=$(pin $py -c '
import time, torch
torch.set_num_threads(1)
best = 0
for n in (256, 512):
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(20):
        t = time.perf_counter(); a @ b; dt = time.perf_counter() - t
        best = max(best, 2 * n**3 / dt / 1e9)
print(f"{best:.1f}")')

echo
echo "=================== summary (one core, CPU seconds) ==================="
awk -v g="$g1" -v p="$p1" -v s="$s1" -v t="$t1" 'BEGIN {
  printf "1. 2x2 linear JEM runs/CPU-s: GoMLX %.0f | kernel portable %.0f (%.1fx GoMLX) | kernel simd %.0f (%.1fx GoMLX)\n", g, p, p/g, s, s/g
  printf "   torch_control counts %.0f runs/s: kernel simd / torch = %.1fx, portable / torch = %.1fx (targets: >= 150000 runs/CPU-s, >= 5x)\n", t, s/t, p/t }'
awk -v g="$c_gomlx" -v p="$c_port" -v s="$c_simd" -v t="$c_torch" 'BEGIN {
  printf "2. 8x4 MLP 16,16 whole process CPU s: control GoMLX %.2f | control portable %.2f | control simd %.2f | torch_mlp.py %.2f\n", g, p, s, t
  printf "   ratio to torch: GoMLX %.2f, portable %.2f, simd %.2f (target <= 0.5)\n", g/t, p/t, s/t }'
printf "   kernel benchmark runs/CPU-s: portable %s, simd %s\n" "$(echo "$mlp_port" | metric runs/cpu_s)" "$(echo "$mlp_simd" | metric runs/cpu_s)"
awk -v p="$(echo "$sg_port" | metric ms_cpu/run_step)" -v s="$(echo "$sg_simd" | metric ms_cpu/run_step)" -v t="$t3" 'BEGIN {
  printf "3. SGLD step ms CPU per run-step: kernel portable %.3f | kernel simd %.3f | torch_sgld %.3f (target <= 0.27; simd is %.2fx torch)\n", p, s, t, t/s }'
printf "4. GFLOP/CPU-s: peak AVX-512 FMA %s, mul+add %s, scalar %s, torch sgemm %s\n" \
  "$(echo "$peak" | grep '/fma' | metric GFLOP/cpu_s)" "$(echo "$peak" | grep '/muladd' | metric GFLOP/cpu_s)" \
  "$(echo "$peak" | grep 'Scalar' | metric GFLOP/cpu_s)" "$sgemm"
printf "   achieved: 2x2 JEM portable %s simd %s | MLP portable %s simd %s | SGLD portable %s simd %s\n" \
  "$(echo "$port_line" | metric GFLOP/cpu_s)" "$(echo "$simd_line" | metric GFLOP/cpu_s)" \
  "$(echo "$mlp_port" | metric GFLOP/cpu_s)" "$(echo "$mlp_simd" | metric GFLOP/cpu_s)" \
  "$(echo "$sg_port" | metric GFLOP/cpu_s)" "$(echo "$sg_simd" | metric GFLOP/cpu_s)"
