package models

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// TestPCDRouting: runs with a PCD sampler train on the fused kernels (also on the
// default Trainer with the GoMLX test knobs set), pass their options through (the
// sampled run differs from exact JEM and repeats exactly), and are refused with a
// clear error on a GoMLX backend, for a model the kernels do not cover, and with bad
// options.
func TestPCDRouting(t *testing.T) {
	small := Shape{XValues: 3, Classes: 2, Encoding: "scalar", Model: "linear", Steps: 50}
	big := Shape{XValues: 70, Classes: 64, Encoding: "onehot", Model: "linear", Steps: 1} // 4480 cells
	knobs := newTrainerOn(t, BackendAuto)
	knobs.noFast = true
	cases := []struct {
		name    string
		tr      *Trainer
		shape   Shape
		pcd     kernel.PCD
		wantErr string
	}{
		{"kernel backend", newTrainerOn(t, BackendKernel), small, kernel.PCD{Exact: true, Negatives: 1, Seed: 5}, ""},
		{"default", newTrainerOn(t, BackendAuto), small, kernel.PCD{Negatives: 4, Buffer: 10, ChainSteps: 2, Seed: 5}, ""},
		{"default with GoMLX knobs", knobs, small, kernel.PCD{Exact: true, Negatives: 1, Seed: 5}, ""},
		{"minibatch", newTrainerOn(t, BackendAuto), func() Shape { s := small; s.BatchSize = 8; return s }(),
			kernel.PCD{Exact: true, Negatives: 2, Seed: 5}, ""},
		{"GoMLX backend", newTrainerOn(t, DefaultBackend), small, kernel.PCD{Exact: true, Negatives: 1}, "pcd trains on the fused CPU kernels only; use --backend=kernel or the default"},
		{"uncovered model", newTrainerOn(t, BackendAuto), big, kernel.PCD{Exact: true, Negatives: 1}, "do not cover"},
		{"bad options", newTrainerOn(t, BackendKernel), small, kernel.PCD{Negatives: 0}, "Negatives"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := mixedRuns(c.shape, 3, 17)
			runs[1].PCD = &c.pcd
			got, err := c.tr.Train(context.Background(), c.shape, runs)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			again, err := c.tr.Train(context.Background(), c.shape, runs[1:2])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[1].Logits, again[0].Logits) || got[1].Loss != again[0].Loss {
				t.Error("the PCD run differs alone and among other runs")
			}
			runs[1].PCD = nil
			exact, err := newTrainerOn(t, BackendKernel).Train(context.Background(), c.shape, runs)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Equal(got[1].Logits, exact[1].Logits) {
				t.Error("the PCD run equals exact JEM: the sampler was not used")
			}
			if !slices.Equal(got[0].Logits, exact[0].Logits) || !slices.Equal(got[2].Logits, exact[2].Logits) {
				t.Error("runs without PCD changed beside a PCD run")
			}
		})
	}
}
