package images

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/methods"
	_ "github.com/jemcheck/jemcheck/methods/all"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// TestDensity: the density's log p(x, y) is mfa's, and its gradient central
// differences'.
func TestDensity(t *testing.T) {
	tr, err := mfa.New(7, mfa.DefaultSpec(8, 3))
	if err != nil {
		t.Fatal(err)
	}
	den, err := newDensity(tr)
	if err != nil {
		t.Fatal(err)
	}
	D := tr.D()
	x, _ := tr.Sample(prob.NewRand(1), 20)
	lj, want, g := make([]float64, 3), make([]float64, 3), make([]float64, D)
	for i := range 20 {
		xi := x[i*D : (i+1)*D]
		lp := den.eval(xi, lj, g)
		tr.LogJoint(xi, want)
		for y := range lj {
			if math.Abs(lj[y]-want[y]) > 1e-9*max(1, math.Abs(want[y])) {
				t.Fatalf("draw %d: log p(x, y) %v, mfa %v", i, lj, want)
			}
		}
		if m := tr.LogMarginal(xi); math.Abs(lp-m) > 1e-9*max(1, math.Abs(m)) {
			t.Fatalf("draw %d: log p(x) %v, mfa %v", i, lp, m)
		}
		j, h := (7*i)%D, 1e-5
		xp, xm := append([]float64(nil), xi...), append([]float64(nil), xi...)
		xp[j] += h
		xm[j] -= h
		fd := (den.eval(xp, nil, nil) - den.eval(xm, nil, nil)) / (2 * h)
		if math.Abs(fd-g[j]) > 1e-5*max(1, math.Abs(fd)) {
			t.Fatalf("draw %d pixel %d: gradient %v, central difference %v", i, j, g[j], fd)
		}
	}
}

// knownSet is the known-answer tests' task (images:8,2 at seed 11) and its evaluation
// set, the AIS base fitted to 2,000 of its draws.
func knownSet(t *testing.T) (*mfa.Truth, *evalSet) {
	t.Helper()
	tr, err := mfa.New(11, mfa.DefaultSpec(8, 2))
	if err != nil {
		t.Fatal(err)
	}
	train, labels := tr.Sample(prob.NewRand(2), 2000)
	set, err := newEvalSet(tr, 5, train, labels)
	if err != nil {
		t.Fatal(err)
	}
	return tr, set
}

// TestKnownAnswer: the truth as the model (f(x)[y] = log p(x, y), ℓ = log p(x)) has
// kl_conditional 0, accuracy the Bayes accuracy, and AIS bounds that cover KL = 0: the
// lower bound at most 3 SE above 0, the upper (reverse AIS from the truth's exact
// draws, the model's own) at least 3 SE below it.
func TestKnownAnswer(t *testing.T) {
	tr, set := knownSet(t)
	ctx := context.Background()
	if os.Getenv(testenv.SlowEnv) != "1" {
		// The default suite runs a quarter of the AIS work (wider SEs, the same
		// coverage checks); JEMCHECK_SLOW=1 (CI) runs the task's settings.
		set.chains, set.temps = 128, 500
	}
	set.cal = set.calibrate(ctx)
	exact, _ := tr.Sample(prob.NewRand(3), set.aisOptions(0).Chains)
	r := set.measure(ctx, truthModel{set.den}, exact)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	t.Logf("kl_conditional %.3g ± %.2g, accuracy %.4f, Bayes %.4f, ece %.4f, auroc_px %.4f (truth %.4f)", r.KLCond, r.KLCondSE, r.Acc, set.bayes, r.ECE, r.AUCPx, set.aucTruePx)
	t.Logf("E[log p − f] %.3g ± %.2g; log Ẑ forward %.4f ± %.4f, reverse %.4f ± %.4f; KL lower %.4f ± %.4f, upper %.4f ± %.4f",
		r.Joint, r.JointSE, r.LogZ, r.LogZSE, r.LogZUp, r.LogZUpSE, r.KLLower, r.KLLowerSE, r.KLUpper, r.KLUpperSE)
	t.Logf("calibration: lower %.4f, upper %.4f, gap %.4f ± %.4f, accepted %v %s", set.cal.Lower, set.cal.Upper, set.cal.Gap, set.cal.GapSE, set.cal.Accepted, set.cal.Reason)
	if set.outside > 0 {
		t.Errorf("%d of %d truth draws outside the box [%g, %g]^D", set.outside, MCDraws, BoxLo, BoxHi)
	}
	if !(math.Abs(r.KLCond) < 1e-12) || r.Acc != set.bayes || r.Joint != 0 {
		t.Errorf("kl_conditional %v, accuracy %v vs Bayes %v, E[log p − f] %v: want 0, equal, 0", r.KLCond, r.Acc, set.bayes, r.Joint)
	}
	if math.Abs(r.AUCPx-set.aucTruePx) > 1e-12 {
		t.Errorf("auroc_px %v, the truth's %v", r.AUCPx, set.aucTruePx)
	}
	if !(r.KLLower <= 3*r.KLLowerSE) || !(r.KLUpper >= -3*r.KLUpperSE) {
		t.Errorf("AIS bounds [%v ± %v, %v ± %v] do not cover KL = 0", r.KLLower, r.KLLowerSE, r.KLUpper, r.KLUpperSE)
	}
	if math.IsNaN(set.cal.Gap) || (set.cal.Accepted && set.cal.Reason != "") || (!set.cal.Accepted && set.cal.Reason == "") {
		t.Errorf("calibration %+v", *set.cal)
	}
	// The calibration's bracket (mixture base, the task's settings) covers the truth's
	// log Z = 0 whether or not the gap is small enough to accept.
	if !set.cal.Covered || !(set.cal.Lower-3*set.cal.LowerSE <= 0 && 0 <= set.cal.Upper+3*set.cal.UpperSE) {
		t.Errorf("calibration bracket [%.4f ± %.4f, %.4f ± %.4f] misses log Z = 0", set.cal.Lower, set.cal.LowerSE, set.cal.Upper, set.cal.UpperSE)
	}
	// The row gets kl_joint_lower exactly where the calibration accepted, and then it
	// covers the model's KL = 0.
	var row schemas.ResultRow
	row.KLJointLower, row.KLJointLowerSE = math.NaN(), math.NaN()
	r.fill(&row, set.cal)
	if set.cal.Accepted != !math.IsNaN(row.KLJointLower) {
		t.Errorf("accepted %v, kl_joint_lower %v", set.cal.Accepted, row.KLJointLower)
	}
	if set.cal.Accepted && !(row.KLJointLower <= 3*row.KLJointLowerSE) {
		t.Errorf("accepted, but kl_joint_lower %v ± %v does not cover KL = 0", row.KLJointLower, row.KLJointLowerSE)
	}
}

// TestKind: parsing, defaults, resolve and the methods with an images hook.
func TestKind(t *testing.T) {
	k := Kind{}
	for _, bad := range []string{"images:7,2", "images:8", "images:8,1", "images:8,11", "images:x,2"} {
		if _, err := parseTask(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	p := tasks.Point{Grid: schemas.DefaultGrid()} // the methods' options at their defaults, as a run's point has them
	p.Task = " images:8, 2"
	k.Defaults(&p, func(string) bool { return false })
	k.Resolve(&p)
	if p.Task != "images:8,2" || p.Classes != 2 || p.XValues != 64 || p.Model != DefaultModel {
		t.Fatalf("resolved %+v", p)
	}
	if got := methods.For(KindName); len(got) < 2 || got[0] != "baseline" {
		t.Errorf("methods for images: %v", got)
	}
	if p.Methods[0] != "baseline" || p.Methods[1] != "sgld" {
		t.Errorf("default methods %v", p.Methods)
	}
	if err := k.Validate(p); err != nil {
		t.Fatal(err)
	}
	if err := methods.Check("jem", KindName, "task images:8,2"); err == nil {
		t.Error("jem accepted on images")
	}
	if k.Dimension(p) != 64 || k.Family(p) != "images:·,2" {
		t.Errorf("dimension %d family %s", k.Dimension(p), k.Family(p))
	}
	for _, c := range []struct{ backend, want string }{
		{models.BackendAuto, ""},
		{"go", ""},
		{"xla:cuda", ""}, // the kind accepts it; whether it loads is launch's check (models.CheckBackend)
		{models.BackendKernel, "does not apply to the images task"},
	} {
		err := k.Limits(tasks.Options{Backend: c.backend}, p, true)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("backend %q: %v, want %q", c.backend, err, c.want)
		}
	}
}

// tilted is the truth tilted along pixel 0 and shifted: f(x)[y] = log p(x, y) + a·x₀ + c,
// so ∇ₓ LSE_y f = ∇ₓ log p(x) + a·e₀ and log p(x, y) − f(x)[y] = −a·x₀ − c, whatever c
// (a normaliser) is.
type tilted struct {
	truthModel
	a, c float64
}

func (m tilted) logits(x []float64, n int) ([]float64, error) {
	f, _ := m.truthModel.logits(x, n)
	D, K := m.Dim(), len(f)/n
	for i := range n {
		for y := range K {
			f[i*K+y] += m.a*x[i*D] + m.c
		}
	}
	return f, nil
}

func (m tilted) LogDensityBatch(x []float64, n int, out, grad []float64) {
	m.truthModel.LogDensityBatch(x, n, out, grad)
	D := m.Dim()
	for i := range n {
		out[i] += m.a*x[i*D] + m.c
		if grad != nil {
			grad[i*D] += m.a
		}
	}
}

// TestZFreeKnownAnswer: the Fisher divergence and the log-ratio spread of the truth are
// 0, and of the truth tilted by a·x₀ (and shifted by any constant: Z cancels) a² exactly
// and a·sd(x₀) over the draws.
func TestZFreeKnownAnswer(t *testing.T) {
	_, set := knownSet(t)
	x0 := make([]float64, len(set.y))
	for i := range x0 {
		x0[i] = set.x[i*set.D]
	}
	sd0, _ := prob.SDSE(x0)
	for _, tc := range []struct {
		name                string
		a, c                float64
		fisher, spread, tol float64
	}{
		{"truth", 0, 0, 0, 0, 1e-9},
		{"truth shifted", 0, 7.5, 0, 0, 1e-9},
		{"tilted", 0.3, 0, 0.09, 0.3 * sd0, 1e-9},
		{"tilted and shifted", -1.5, -40, 2.25, 1.5 * sd0, 1e-9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m model = tilted{truthModel{set.den}, tc.a, tc.c}
			set.cal = &calibration{Accepted: false} // no AIS: the Z-free measures need none
			r := set.measure(context.Background(), m, nil)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if math.Abs(r.Fisher-tc.fisher) > tc.tol*max(1, tc.fisher) || !(r.FisherSE <= tc.tol) {
				t.Errorf("Fisher divergence %v ± %v, want %v exactly", r.Fisher, r.FisherSE, tc.fisher)
			}
			if math.Abs(r.Spread-tc.spread) > tc.tol*max(1, tc.spread) {
				t.Errorf("log-ratio spread %v, want %v", r.Spread, tc.spread)
			}
			var row schemas.ResultRow
			r.fill(&row, set.cal)
			finishRow(&row, tasks.Trained{Job: tasks.Job{Method: "jem"}})
			r.fillZFree(&row)
			if row.FisherDiv != r.Fisher || row.LogRatioSD != r.Spread {
				t.Errorf("row fisher_div %v, log_ratio_sd %v: not the measures %v, %v", row.FisherDiv, row.LogRatioSD, r.Fisher, r.Spread)
			}
		})
	}
}
