#!/usr/bin/env bash
# The CNN on a GPU: the device check of docs/scale.md ("The CNN on a GPU").
#
#   scripts/gpu-check.sh build        here: cgo + -tags xla builds of scripts/gpucheck and
#                                     pipelines/control into .gpu/ (stripped, xz-packed)
#   scripts/gpu-check.sh run [OUTDIR] on the GPU machine, from the repository root with
#                                     .gpu/ beside it: finds JAX's CUDA PJRT plugin, then
#                                     1. gpucheck: xla:cuda against the pure-Go backend
#                                        (logits, LSE and its input gradient, 10 training
#                                        steps) and ms per step at S = 16 and 28;
#                                     2. the PyTorch peer of the same CNN step on the same
#                                        GPU (scripts/peers/torch_cnn.py ... cuda);
#                                     3. bin/control on images:28,10 (D = 784) with
#                                        --backend=xla:<plugin>, its outputs tarred.
# Every part has its own timeout; the outputs go to OUTDIR (default $OUT or /tmp/gpu-check).
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
build)
  set -e
  mkdir -p .gpu
  export CGO_ENABLED=1 GOEXPERIMENT=simd
  go build -tags xla -trimpath -ldflags='-s -w' -o .gpu/gpucheck ./scripts/gpucheck
  go build -tags xla -trimpath -ldflags='-s -w' -o .gpu/control ./pipelines/control
  rm -f .gpu/*.xz
  xz -T2 -6 .gpu/gpucheck .gpu/control
  ls -la .gpu
  ;;
run)
  out=${2:-${OUT:-/tmp/gpu-check}}
  mkdir -p "$out"
  for f in .gpu/*.xz; do xz -d -k -f "$f"; done
  chmod +x .gpu/gpucheck .gpu/control
  nvidia-smi -L | tee "$out/device.txt"
  plugin=$(python3 - <<'EOF'
import glob, os, site
for d in site.getsitepackages():
    for p in sorted(glob.glob(os.path.join(d, "jax_plugins", "xla_cuda*", "xla_cuda_plugin.so"))):
        print(p); raise SystemExit
EOF
)
  echo "plugin: $plugin" | tee -a "$out/device.txt"
  [ -n "$plugin" ] || { echo "no JAX CUDA PJRT plugin found"; exit 1; }
  # The plugin's CUDA libraries are the pip nvidia-* packages beside it.
  nv=$(dirname "$(dirname "$(dirname "$plugin")")")/nvidia
  libs=$(find "$nv" -maxdepth 3 -type d -name lib 2>/dev/null | tr '\n' ':')
  export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:-}" GOPJRT_CUDA_CHECKS=0
  backend="xla:$plugin"
  echo "== gpucheck"
  timeout 400 .gpu/gpucheck --backend="$backend" --sides=16,28 --steps=200 --go_steps=3 2>&1 | tee "$out/gpucheck.txt"
  echo "== torch peer (same GPU)"
  for S in 16 28; do
    timeout 60 python3 scripts/peers/torch_cnn.py 200 "$S" cuda 2>&1 | sed "s/^/torch S $S /" | tee -a "$out/torch.txt"
  done
  echo "== control images:28,10 on $backend"
  /usr/bin/time -v timeout 240 .gpu/control --task=images:28,10 --tables=2 --steps=300 --methods=baseline,sgld \
    --backend="$backend" --timings --out=/tmp/img784 >"$out/control.txt" 2>&1
  echo "control rc $?" | tee -a "$out/control.txt"
  tail -40 "$out/control.txt"
  tar -czf "$out/img784.tgz" -C /tmp img784 2>/dev/null
  ;;
*)
  echo "usage: $0 build | run [OUTDIR]" >&2
  exit 2
  ;;
esac
