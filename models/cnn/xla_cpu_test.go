package cnn

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The CNN on XLA's CPU compiler through a PJRT CPU plugin loaded by path (docs/images.md,
// "The CNN on XLA's CPU backend"). Optional: the test and the benchmark run only when
// JEMCHECK_XLA_PLUGIN names the plugin's .so (scripts/xla-cpu.sh fetches one and prints
// its path) and the test binary is built with cgo and -tags xla:
//
//	CGO_ENABLED=1 JEMCHECK_XLA_PLUGIN=$(scripts/xla-cpu.sh) \
//	  go test -tags xla -run XLACPU -bench CNNXLACPU -benchtime 20x ./models/cnn/
//
// Otherwise they skip with the reason; CI runs neither.

// xlaCPUBackend is the backend configuration of the plugin in JEMCHECK_XLA_PLUGIN, or
// skips the test.
func xlaCPUBackend(tb testing.TB) string {
	tb.Helper()
	plugin := os.Getenv("JEMCHECK_XLA_PLUGIN")
	if plugin == "" {
		tb.Skip("JEMCHECK_XLA_PLUGIN unset: no XLA CPU PJRT plugin to test (scripts/xla-cpu.sh fetches one and prints its path)")
	}
	if !filepath.IsAbs(plugin) {
		tb.Fatalf("JEMCHECK_XLA_PLUGIN=%q: give the plugin's absolute path", plugin)
	}
	if _, err := os.Stat(plugin); err != nil {
		tb.Fatalf("JEMCHECK_XLA_PLUGIN: %v", err)
	}
	config := "xla:" + plugin
	if _, err := newBackend(config); err != nil {
		if strings.Contains(err.Error(), "not compiled in") {
			tb.Skipf("JEMCHECK_XLA_PLUGIN set, but this test binary has no XLA backend (build with CGO_ENABLED=1 and -tags xla): %v", err)
		}
		tb.Fatalf("%s: %v", config, err)
	}
	return config
}

// xlaRel is max |a − b| / max(max |b|, 1e-12).
func xlaRel(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / max(m, 1e-12)
}

// TestXLACPUMatchesGo: the same parameters and data on the plugin and on the pure-Go
// backend give the same logits, LSE_y f(x) and its input gradient (relative 1e-4; XLA's
// CPU float32 kernels differ from SimpleGo's in summation order only, measured ≤ 1e-6),
// and 10 training steps from the same start the same update, ‖Δθ_xla − Δθ_go‖/‖Δθ_go‖:
// baseline 1e-3 with the hand backward pass and with GoMLX autodiff (measured ≤ 1e-5),
// jem-sgld 0.1 (20 SGLD steps of size 1 each amplify the last bits; measured 0.009 here
// and 0.024 in the GPU check, whose tolerance this is); the final losses to 1e-4
// (baseline) and 1e-2 (jem-sgld) relative.
func TestXLACPUMatchesGo(t *testing.T) {
	be := xlaCPUBackend(t)
	sp, _ := Parse("cnn:16,32")
	d := barRing(512, 16, 0.5, 1)
	d.K = 10
	for i := range d.Y {
		d.Y[i] = i % 10
	}
	p, err := Init(sp, 16, 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	n := 256
	x := d.X[:n*16*16]
	lg, err := LogitsOn("", p, x, n)
	if err != nil {
		t.Fatal(err)
	}
	lx, err := LogitsOn(be, p, x, n)
	if err != nil {
		t.Fatal(err)
	}
	const evalTol = 1e-4
	for _, c := range []struct {
		name string
		a, b []float32
	}{{"logits", lx, lg}} {
		if r := xlaRel(c.a, c.b); r > evalTol {
			t.Errorf("%s: xla vs go rel %.3g > %g", c.name, r, evalTol)
		} else {
			t.Logf("%s: rel %.3g", c.name, r)
		}
	}
	eg, gg, err := EnergyOn("", p, x, n, true)
	if err != nil {
		t.Fatal(err)
	}
	ex, gx, err := EnergyOn(be, p, x, n, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		a, b []float32
	}{{"lse", ex, eg}, {"lse input gradient", gx, gg}} {
		if r := xlaRel(c.a, c.b); r > evalTol {
			t.Errorf("%s: xla vs go rel %.3g > %g", c.name, r, evalTol)
		} else {
			t.Logf("%s: rel %.3g", c.name, r)
		}
	}
	for _, c := range []struct {
		name string
		o    TrainOptions
		tol  float64 // of the update
		loss float64 // of the final loss, relative to max(1, |loss|)
	}{
		{"baseline/hand", TrainOptions{}, 1e-3, 1e-4},
		{"baseline/autodiff", TrainOptions{Autodiff: true}, 1e-3, 1e-4},
		{"jem-sgld/hand", TrainOptions{Objective: SGLD{}}, 0.1, 1e-2},
	} {
		o := c.o
		o.Steps, o.Batch, o.LR, o.Seed, o.Init = 10, 64, 1e-3, 3, &p
		pg, sg, err := Train(context.Background(), sp, d, o)
		if err != nil {
			t.Fatalf("%s go: %v", c.name, err)
		}
		o.Backend = be
		px, sx, err := Train(context.Background(), sp, d, o)
		if err != nil {
			t.Fatalf("%s xla: %v", c.name, err)
		}
		// Adam normalises each coordinate's step: compare the whole update, not coordinates.
		var dd, dn float64
		for i := range pg.Tensors {
			for j := range pg.Tensors[i] {
				ug := float64(pg.Tensors[i][j]) - float64(p.Tensors[i][j])
				ux := float64(px.Tensors[i][j]) - float64(p.Tensors[i][j])
				dd += (ux - ug) * (ux - ug)
				dn += ug * ug
			}
		}
		r := math.Sqrt(dd / max(dn, 1e-300))
		lossG, lossX := sg.Loss[len(sg.Loss)-1], sx.Loss[len(sx.Loss)-1]
		if r > c.tol || math.Abs(float64(lossG-lossX)) > c.loss*max(1, math.Abs(float64(lossG))) {
			t.Errorf("%s: 10 steps, update rel %.3g (tol %g), final loss xla %.5f go %.5f", c.name, r, c.tol, lossX, lossG)
		} else {
			t.Logf("%s: 10 steps, update rel %.3g, final loss xla %.5f go %.5f", c.name, r, lossX, lossG)
		}
	}
}

// BenchmarkCNNXLACPU is BenchmarkCNN's baseline, sgld-step and jem-sgld20 cases on the
// plugin (scripts/bench-cnn.sh runs it when JEMCHECK_XLA_PLUGIN is set). A Train call
// builds and compiles its graph (XLA's compile takes hundreds of ms), so each training
// case is timed as the difference of a b.N-step and a 2·b.N-step run after a 1-step
// warm-up, reported as ms/step; sgld-step reuses one compiled graph and is timed per call.
func BenchmarkCNNXLACPU(b *testing.B) {
	be := xlaCPUBackend(b)
	sp, _ := Parse(benchModel)
	d := benchData()
	train := func(b *testing.B, opts TrainOptions) {
		opts.Backend, opts.Batch, opts.LR, opts.Seed = be, 64, 1e-4, 1
		var took [2]time.Duration
		for i, steps := range []int{1, b.N, 2 * b.N} {
			o := opts
			o.Steps = steps
			t0 := time.Now()
			_, st, err := Train(context.Background(), sp, d, o)
			if err != nil || st.Diverged {
				b.Fatal(err, st.Diverged)
			}
			if i > 0 {
				took[i-1] = time.Since(t0)
			}
		}
		b.ReportMetric(float64(took[1]-took[0])/1e6/float64(b.N), "ms/step")
	}
	for _, ad := range []struct {
		name     string
		autodiff bool
	}{{"hand", false}, {"autodiff", true}} {
		b.Run("baseline/"+ad.name, func(b *testing.B) {
			train(b, TrainOptions{Autodiff: ad.autodiff})
		})
		b.Run("sgld-step/"+ad.name, func(b *testing.B) {
			p, _ := Init(sp, 16, 10, 1)
			x := d.X[:64*256]
			if _, err := evaluate(be, p, x, 64, evalEnergyGrad, ad.autodiff); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			for range b.N {
				if _, err := evaluate(be, p, x, 64, evalEnergyGrad, ad.autodiff); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(t0))/1e6/float64(b.N), "ms/step")
		})
		b.Run("jem-sgld20/"+ad.name, func(b *testing.B) {
			train(b, TrainOptions{Objective: SGLD{Steps: 20}, Autodiff: ad.autodiff})
		})
	}
}
