#!/usr/bin/env bash
# Fetch an XLA CPU PJRT plugin for GoMLX's XLA backend (models/cnn on one CPU core at
# PyTorch's speed; docs/images.md, "The CNN on XLA's CPU backend") and print its path.
#
# The plugin is pjrt_c_api_cpu_plugin.so from the PyPI wheel lammps-jax-pjrt-cpu 0.11.2
# (Apache-2.0; OpenXLA's //xla/pjrt/c:pjrt_c_api_cpu_plugin.so built from XLA commit
# 91888df6ce85102c30220e41d952065925e10886, the XLA of jaxlib 0.11.2; third-party notices
# in the wheel, copied beside the plugin). pip downloads the wheel alone (--no-deps: its
# jax requirement is not needed) into the cache folder, the wheel's and the plugin's
# SHA-256 are checked against the pins below, and nothing is installed into any Python.
#
#   usage: scripts/xla-cpu.sh [CACHE]   (default $JEMCHECK_XLA_CACHE or ~/.cache/jemcheck/xla)
#   then:  CGO_ENABLED=1 go build -tags xla ... and --backend=xla:$(scripts/xla-cpu.sh)
#          (tests: JEMCHECK_XLA_PLUGIN=$(scripts/xla-cpu.sh); set GOMLX_NO_AUTO_INSTALL=1)
set -euo pipefail
pkg=lammps-jax-pjrt-cpu
ver=0.11.2
wheel=lammps_jax_pjrt_cpu-0.11.2-py3-none-manylinux_2_27_x86_64.whl
wheel_sha=1319390d948b39f69f7dade496b7c385149d9ca6097a6b62114da113216d9ad1
so=lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so
so_sha=ad1309ac822b1b24d51b7f9947c7c9fa9ef5d67f390584cbc3d1fa2428fed9c2
cache=${1:-${JEMCHECK_XLA_CACHE:-$HOME/.cache/jemcheck/xla}}
dir=$cache/$pkg-$ver
plugin=$dir/pjrt_c_api_cpu_plugin.so
check() { echo "$2  $1" | sha256sum -c --status; }
if [ -f "$plugin" ] && check "$plugin" "$so_sha"; then
  echo "$plugin"
  exit 0
fi
[ "$(uname -sm)" = "Linux x86_64" ] || { echo "xla-cpu: the wheel is for Linux x86_64 only" >&2; exit 1; }
mkdir -p "$dir"
if ! { [ -f "$dir/$wheel" ] && check "$dir/$wheel" "$wheel_sha"; }; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_27_x86_64 \
    --python-version 3 --implementation py --dest "$dir" "$pkg==$ver" >&2
fi
check "$dir/$wheel" "$wheel_sha" || { echo "xla-cpu: $dir/$wheel: SHA-256 differs from the pin" >&2; exit 1; }
python3 - "$dir/$wheel" "$dir" "$so" <<'PY'
import os, sys, zipfile
wheel, dest, so = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        base = os.path.basename(name)
        if name == so:
            out = os.path.join(dest, base + ".tmp")
        elif "/licenses/" in name:
            out = os.path.join(dest, base)
        else:
            continue
        with z.open(name) as r, open(out, "wb") as w:
            w.write(r.read())
PY
check "$plugin.tmp" "$so_sha" || { rm -f "$plugin.tmp"; echo "xla-cpu: the plugin's SHA-256 differs from the pin" >&2; exit 1; }
chmod 0755 "$plugin.tmp"
mv "$plugin.tmp" "$plugin"
echo "$plugin"
