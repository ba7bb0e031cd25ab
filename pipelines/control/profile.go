package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole run (the in-process runner's workers
// included) to the file named by JEMCHECK_CPUPROFILE, when it is set, and the run's
// allocations (heap profile: go tool pprof -sample_index=alloc_space) to the file named
// by JEMCHECK_MEMPROFILE; the returned function stops and writes them. For throughput
// work: go tool pprof -top control FILE.
func startProfile() func() {
	stopCPU := startCPUProfile()
	mem := os.Getenv("JEMCHECK_MEMPROFILE")
	if mem == "" {
		return stopCPU
	}
	return func() {
		stopCPU()
		f, err := os.Create(mem)
		if err != nil {
			fmt.Fprintf(os.Stderr, "control: JEMCHECK_MEMPROFILE: %v\n", err)
			return
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			fmt.Fprintf(os.Stderr, "control: JEMCHECK_MEMPROFILE: %v\n", err)
		}
	}
}

func startCPUProfile() func() {
	path := os.Getenv("JEMCHECK_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "control: JEMCHECK_CPUPROFILE: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "control: JEMCHECK_CPUPROFILE: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
