// Command pjrt-install installs the GoMLX XLA/PJRT plugins into a container image at
// build time, so that workers never download anything at run time (Dataflow workers
// often have no internet access). It is part of the main module: go.mod requires
// github.com/gomlx/go-xla (GoMLX's XLA backend, linked with -tags xla), and this
// program compiles with that pinned version.
//
//	go run ./infra/docker/pjrt-install -plugin=cuda13 -version=latest -path=/usr/local/lib/go-xla
//
// The CUDA plugin and the NVIDIA libraries it needs (from the JAX wheels on pypi.org)
// land in PATH/nvidia; the CPU plugin (from github.com/gomlx/pjrt-cpu-binaries) in
// PATH. Run the binary with GOMLX_NO_AUTO_INSTALL=1 and
// PJRT_PLUGIN_LIBRARY_PATH=PATH/nvidia:PATH, XLA_FLAGS=--xla_gpu_cuda_data_dir=PATH/nvidia.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/go-xla/pkg/installer"
)

func main() {
	plugin := flag.String("plugin", "cuda13", "CUDA PJRT plugin: cuda13 or cuda12; empty skips CUDA")
	version := flag.String("version", "latest", "JAX release of the CUDA plugin (e.g. 0.8.0), or latest")
	cpuVersion := flag.String("cpu_version", "v0.83.3", "release of github.com/gomlx/pjrt-cpu-binaries for the CPU plugin (v0.83.3 is go-xla v0.1.4's default); empty skips it")
	dir := flag.String("path", "/usr/local/lib/go-xla", "install directory (a .../lib/go-xla directory)")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	if *plugin != "" {
		// CudaInstall, not CudaAutoInstall: there is no GPU at image build time, and
		// the auto installer skips CUDA without one.
		if err := installer.CudaInstall(*plugin, *version, *dir, false, installer.Verbose); err != nil {
			fail(fmt.Errorf("install %s PJRT plugin %s: %w", *plugin, *version, err))
		}
		if _, err := os.Stat(filepath.Join(*dir, "nvidia", "pjrt_c_api_cuda_plugin.so")); err != nil {
			fail(fmt.Errorf("CUDA plugin not where expected: %w", err))
		}
	}
	if *cpuVersion != "" {
		if err := installer.CPUInstall("linux_amd64", *cpuVersion, *dir, false, installer.Verbose); err != nil {
			fail(fmt.Errorf("install CPU PJRT plugin %s: %w", *cpuVersion, err))
		}
	}
	fmt.Printf("PJRT plugins installed in %s\n", *dir)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pjrt-install:", err)
	os.Exit(1)
}
