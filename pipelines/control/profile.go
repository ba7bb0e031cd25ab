package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole run (the in-process runner's workers
// included) to the file named by JEMCHECK_CPUPROFILE, when it is set; the returned
// function stops it. For throughput work: go tool pprof -top control FILE.
func startProfile() func() {
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
