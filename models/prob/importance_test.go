package prob

import (
	"math"
	"testing"
)

func TestImportanceLogZ(t *testing.T) {
	t.Run("proposal is the target", func(t *testing.T) {
		lw := []float64{math.Log(3), math.Log(3), math.Log(3), math.Log(3)}
		e := importanceMoments(lw)
		if math.Abs(e.LogZ-math.Log(3)) > 1e-15 || e.SE != 0 || e.ESS != 4 {
			t.Fatalf("got %+v, want log 3 exactly, SE 0, ESS 4", e)
		}
		// 4 draws are below MinESS: refused, log Ẑ kept, no SE
		if e := ImportanceLogZ(lw); !e.Refused() || e.Reason == "" || !math.IsNaN(e.SE) || math.Abs(e.LogZ-math.Log(3)) > 1e-15 {
			t.Fatalf("got %+v, want refused (ESS 4) with log Ẑ = log 3 and SE NaN", e)
		}
		lw = make([]float64, 1000)
		for i := range lw {
			lw[i] = math.Log(3)
		}
		if e := ImportanceLogZ(lw); e.Refused() || e.SE != 0 || !math.IsNaN(e.K) {
			t.Fatalf("1000 equal weights: got %+v, want used, SE 0, k̂ NaN (no tail)", e)
		}
	})
	t.Run("no mass", func(t *testing.T) {
		e := ImportanceLogZ([]float64{math.Inf(-1), math.Inf(-1)})
		if !math.IsInf(e.LogZ, -1) || !e.Refused() {
			t.Fatalf("got %+v, want −Inf and refused", e)
		}
	})
	// exp(−x²/2) has Z = √(2π); from N(0, 2²) the estimate's z-score is N(0, 1): over 200
	// repetitions the share within 1.96 SE is near 95%.
	t.Run("Gaussian, coverage", func(t *testing.T) {
		rng := NewRand(1)
		want := 0.5 * math.Log(2*math.Pi)
		in := 0
		const reps, n = 200, 2000
		for range reps {
			lw := make([]float64, n)
			for i := range lw {
				x := 2 * rng.NormFloat64()
				logr := -x*x/8 - math.Log(2*math.Sqrt(2*math.Pi))
				lw[i] = -x*x/2 - logr
			}
			e := ImportanceLogZ(lw)
			if math.Abs(e.LogZ-want) <= 1.96*e.SE {
				in++
			}
			if e.ESS < 0.3*n || e.Refused() {
				t.Fatalf("ESS %v of %d", e.ESS, n)
			}
		}
		if in < 180 || in > 198 {
			t.Fatalf("%d of %d estimates within 1.96 SE, want about 190", in, reps)
		}
	})
}

// TestBlocksImportanceLogZ: known answers on block tasks: the truth's own density has Z =
// its mass in the box (1 up to 1e-6 at box 6), the flat model Z = (2·box)^2B.
func TestBlocksImportanceLogZ(t *testing.T) {
	for _, c := range []struct {
		task string
		B    int
	}{{"gmm:3,2", 1}, {"gmm:3,2", 3}, {"moons:0.2", 2}} {
		spec, err := ParseBlocksSpec("blocks:" + string(rune('0'+c.B)) + "," + c.task)
		if err != nil {
			t.Fatal(err)
		}
		task := spec.Draw(11)
		const box = 6.0
		truth := func(x []float64, n int) []float64 {
			out := make([]float64, n)
			for i := range n {
				out[i] = task.LogDensity(x[i*2*c.B : (i+1)*2*c.B])
			}
			return out
		}
		flat := func(x []float64, n int) []float64 { return make([]float64, n) }
		for _, m := range []struct {
			name string
			lse  func([]float64, int) []float64
			want float64
		}{{"truth", truth, 0}, {"flat", flat, float64(2*c.B) * math.Log(2*box)}} {
			e := task.ImportanceLogZ(5, 4000, 0.5, box, m.lse)
			if e.Refused() || math.Abs(e.LogZ-m.want) > 4*e.SE+1e-5 {
				t.Errorf("%s B=%d %s model: log Z %v ± %v (ESS %.0f), want %v", c.task, c.B, m.name, e.LogZ, e.SE, e.ESS, m.want)
			}
		}
	}
}

// TestAISLogZ: known answers: a Gaussian bump exp(−|x|²/2σ²) well inside the box has
// Z = (2πσ²)^{d/2}; the flat function Z = (2·box)^d exactly.
func TestAISLogZ(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     int
		sigma float64
	}{{"d=2 σ=0.5", 2, 0.5}, {"d=4 σ=0.7", 4, 0.7}, {"d=6 σ=1", 6, 1}} {
		t.Run(c.name, func(t *testing.T) {
			const box = 5.0
			bump := func(x []float64, n int) []float64 {
				out := make([]float64, n)
				for i := range n {
					for _, v := range x[i*c.d : (i+1)*c.d] {
						out[i] -= v * v / (2 * c.sigma * c.sigma)
					}
				}
				return out
			}
			want := float64(c.d) / 2 * math.Log(2*math.Pi*c.sigma*c.sigma)
			// AIS's chain weights go through ImportanceLogZ's rule: where their Pareto k̂
			// is above MaxParetoK (d = 6: k̂ 0.5–0.6 of 512 chains) the estimate is refused,
			// and its log Ẑ stays a close lower bound.
			e := AISLogZ(3, c.d, box, DefaultAIS, bump)
			switch {
			case e.Refused() && (e.ESS < MinESS || !(e.K > MaxParetoK) || e.LogZ > want+0.05 || e.LogZ < want-0.1):
				t.Errorf("bump: refused (%s) with log Z %v (ESS %.0f, k̂ %.2f), want %v", e.Reason, e.LogZ, e.ESS, e.K, want)
			case !e.Refused() && math.Abs(e.LogZ-want) > 4*e.SE+0.02:
				t.Errorf("bump: log Z %v ± %v (ESS %.0f), want %v", e.LogZ, e.SE, e.ESS, want)
			}
			t.Logf("bump: log Z %v ± %v (ESS %.0f, k̂ %.2f %s), want %v", e.LogZ, e.SE, e.ESS, e.K, e.Reason, want)
			flat := func(x []float64, n int) []float64 { return make([]float64, n) }
			if e := AISLogZ(3, c.d, box, DefaultAIS, flat); math.Abs(e.LogZ-float64(c.d)*math.Log(2*box)) > 1e-9 {
				t.Errorf("flat: log Z %v, want %v", e.LogZ, float64(c.d)*math.Log(2*box))
			}
		})
	}
}
