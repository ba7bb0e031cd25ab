package images

// The tractable-Z yardstick at image scale: --model=mfa:C,d trains, on the same tasks,
// draws and protocol as a CNN, a per-class mixture of C factor analysers with d factors
// read as a classifier's logits (kernel.MFASpec; f(x)[y] = a_y + log Σ_c w_yc N(x; μ_yc,
// Λ_ycΛ_ycᵀ + diag ψ_yc)), whose normaliser Z = Σ_y exp a_y is exact in any D. Exact jem
// (and jem-converged) train it with that log Z; every recipe with a block-task hook
// (methods.Blocks: the same objectives in D coordinates) trains the same family with Z
// unknown, on the fused trainer (kernel.TrainMFA). The truth (models/prob/mfa) is a
// member of the family for C ≥ Components + 2 and d ≥ Factors + 1 (mfa:5,9 at the
// default spec), so exact jem's excess is estimation and optimisation error alone.
//
// Every run's joint KL is exact up to Monte Carlo error: KL(p‖q) = E_p[log p(x, y) −
// f(x)[y]] + log Z over the task's MCDraws exact draws (kl_joint, kl_joint_se, log_z;
// and q(x)'s, E_p[log p(x) − LSE_y f(x)[y]] + log Z: kl_marginal, kl_marginal_se),
// and every run's held-out NLL is exact too, so the protocol (held-out selection, the
// converged yardstick) applies as on the block tasks. The model sees pixels shifted
// by −½ (a translation: every density and KL is unchanged) and the objectives' box is
// [−MFABox, MFABox]^D, the pixel range with room on each side.

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/models/prob/mfa"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/tasks/plane"
)

// MFAPrefix starts the MFA model's name.
const MFAPrefix = "mfa:"

// MFABox is the half-width of the objectives' box around the shifted pixels.
const MFABox = 1.5

// MFAMaxEnergy is the MFA model's divergence guard on |loss| and |mean LSE f|: a
// Gaussian's log density at a point of the box far from its mean is −r²/2ψ summed over
// D pixels, thousands of nats at a pixel variance of 0.01 (a legitimate value, not a
// divergence); a non-finite step still trips the guard.
const MFAMaxEnergy = 1e7

// Defaults of an MFA point (the CNN's lr is too small for it: exact jem at lr 1e-3 is
// 10–14 nats from the truth after 300 steps at images:8,2, 2–3 at lr 0.01).
const (
	DefaultMFALR    = 1e-2
	DefaultMFASteps = 1000
)

// mfaShift is subtracted from every pixel the MFA model sees.
const mfaShift = 0.5

// MethodKind is the kind whose methods a point trains: the block tasks' on the MFA
// model (their objectives in D coordinates), the images kind's own (the CNN's) else.
func (Kind) MethodKind(p tasks.Point) string {
	if isMFA(p.Model) {
		return methods.KindBlocks
	}
	return KindName
}

// parseMFA reads "mfa:C,d" (ok false for another model's name).
func parseMFA(model string) (c, d int, ok bool, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(model), MFAPrefix)
	if !ok {
		return 0, 0, false, nil
	}
	parts := strings.Split(rest, ",")
	if len(parts) != 2 {
		return 0, 0, true, fmt.Errorf("model %s: want mfa:C,d (C components a class, d factors)", methods.Quote(model))
	}
	c, err1 := strconv.Atoi(strings.TrimSpace(parts[0]))
	d, err2 := strconv.Atoi(strings.TrimSpace(parts[1]))
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, true, fmt.Errorf("model %s: C and d must be integers", methods.Quote(model))
	case c < 1 || c > kernel.MaxMFAComponents:
		return 0, 0, true, fmt.Errorf("model %s: C must be in [1, %d], got %d", methods.Quote(model), kernel.MaxMFAComponents, c)
	case d < 0 || d > kernel.MaxMFAFactors:
		return 0, 0, true, fmt.Errorf("model %s: d must be in [0, %d], got %d", methods.Quote(model), kernel.MaxMFAFactors, d)
	}
	return c, d, true, nil
}

// isMFA reports whether a point's model is the MFA yardstick.
func isMFA(model string) bool {
	_, _, ok, _ := parseMFA(model)
	return ok
}

// mfaSpecOf is the point's MFA model shape.
func mfaSpecOf(p tasks.Point) (kernel.MFASpec, error) {
	c, d, _, err := parseMFA(p.Model)
	if err != nil {
		return kernel.MFASpec{}, err
	}
	return kernel.MFASpec{K: p.Classes, C: c, Factors: d, Dim: p.XValues}, nil
}

// validateMFA checks an MFA point's model and methods (every method needs a block-task
// hook: the objectives in D coordinates).
func validateMFA(p tasks.Point) error {
	sp, err := mfaSpecOf(p)
	if err != nil {
		return err
	}
	if err := sp.Validate(); err != nil {
		return fmt.Errorf("model %s: %w", p.Model, err)
	}
	if p.BatchSize%kernel.VW != 0 || p.BatchSize > 4096 {
		return fmt.Errorf("batch_size: the MFA model trains on the fused kernels, whose batch is a multiple of %d in [%d, 4096], got %d", kernel.VW, kernel.VW, p.BatchSize)
	}
	for _, m := range p.Methods {
		if _, ok := methods.Blocks.Of(m); !ok {
			return fmt.Errorf("method %s has no trainer for the MFA model (it trains the methods of block tasks: %s)", methods.Quote(m), strings.Join(methods.For(methods.KindBlocks), ", "))
		}
		if _, err := specMFA(p, m, 0); err != nil {
			return err
		}
	}
	return nil
}

// specMFA is method m's spec on an MFA point: the point's settings, then the method's
// block-task hook (plane.Hook: full batches for the converged yardstick).
func specMFA(p tasks.Point, m string, observe int) (kernel.SpecMFA, error) {
	sp, err := mfaSpecOf(p)
	if err != nil {
		return kernel.SpecMFA{}, err
	}
	s := kernel.Spec2D{K: p.Classes, Steps: p.Steps, Batch: p.BatchSize, PxWeight: float32(p.PxWeight), Box: MFABox, ObserveEvery: observe,
		MaxEnergy: MFAMaxEnergy}
	if err := plane.Hook(m, methods.KindBlocks, p, &s); err != nil {
		return kernel.SpecMFA{}, err
	}
	out := kernel.SpecMFA{Spec2D: s, MFA: sp}
	if err := out.Validate(); err != nil {
		return out, fmt.Errorf("method %s on %s: %w", m, p.Model, err)
	}
	return out, nil
}

// shifted is x − mfaShift in float32.
func shifted(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v - mfaShift)
	}
	return out
}

// mfaTask is one task's data for the MFA trainer.
type mfaTask struct {
	t         tasks.Table
	tableSeed uint64
	x         []float32 // training draws, shifted
	y         []int32
	hx        []float64 // held-out draws, shifted (float64)
	hy        []int32
	held      *kernel.MFAEvaluator // the held-out draws on the trainer's lanes
	eval      *kernel.MFAEvaluator // the evaluation draws on the lanes
	lp        float64              // the mean log p(x, y) of the evaluation draws
}

// nll is the held-out NLL at a check (float32 lanes, as trained).
func (d *mfaTask) nll(theta []float32) float64 { return d.held.NLL(theta) }

// kl is the exact joint KL at a check: Monte Carlo over the evaluation draws, log Z exact.
func (d *mfaTask) kl(theta []float32) float64 { return d.lp + d.eval.NLL(theta) }

// trainMFA trains every run of a block on the MFA model: one kernel.TrainMFA call per
// method over the block's tasks, every method of a task from the same start
// (kernel.InitMFA from the task's seed and training draws), held-out selection and the
// converged yardstick as on the block tasks, a curve of the exact joint KL and
// held-out NLL at every check.
func (s *source) trainMFA(ctx context.Context, b tasks.Block) (tasks.TrainedBlock, error) {
	p, o := s.p, s.env.Options
	start := time.Now()
	m := len(p.Methods)
	out := tasks.TrainedBlock{Block: b, Runs: make([]tasks.TrainedRun, b.Len()*m)}
	sp, err := mfaSpecOf(p)
	if err != nil {
		return out, err
	}
	D, K := sp.Dim, sp.K
	ds := make([]mfaTask, b.Len())
	for i := range b.Len() {
		t := b.Table(p, i)
		tr, x, y, n, err := s.trainDraws(t)
		if err != nil {
			return out, err
		}
		seed := tasks.TableSeed(o.Seed, t)
		ex, ey := evalDraws(tr, seed)
		d := mfaTask{t: t, tableSeed: seed, x: shifted(x[:n*D]), y: y[:n], hy: y[n:]}
		d.hx = make([]float64, len(x)-n*D)
		for k, v := range x[n*D:] {
			d.hx[k] = v - mfaShift
		}
		ev, lj := tr.NewEvaluator(), make([]float64, K)
		for k, c := range ey {
			ev.LogJoint(ex[k*D:(k+1)*D], lj)
			d.lp += lj[c]
		}
		d.lp /= float64(len(ey))
		for k := range ex {
			ex[k] -= mfaShift
		}
		d.held, d.eval = kernel.NewMFAEvaluator(sp, d.hx, d.hy), kernel.NewMFAEvaluator(sp, ex, ey)
		ds[i] = d
	}
	for j, meth := range p.Methods {
		spec, err := specMFA(p, meth, o.CheckEvery(p.Steps))
		if err != nil {
			return out, err
		}
		lr := tasks.RunLR(meth, p.LR)
		loop := tasks.MethodLoop{Method: meth, Steps: spec.Steps, Select: o.Select, PerStep: spec.Spec2D.GradEvalsPerStep(D),
			Check: func(i int, theta []float32) (tasks.CurvePoint, []float64) {
				return tasks.CurvePoint{KLJoint: ds[i].kl(theta), KLMarginal: math.NaN(), KLConditional: math.NaN(), HeldoutNLL: ds[i].nll(theta)}, nil
			}}
		runs := make([]kernel.RunAdditive, len(ds))
		for i := range ds {
			d := &ds[i]
			runs[i] = kernel.RunAdditive{Seed: tasks.TrainSeed(o.Seed, d.t, meth), Theta: kernel.InitMFA(sp, prob.Seed(d.tableSeed, prob.SeedString("init")), d.x, d.y),
				LR: float32(lr), X: d.x, Y: d.y}
		}
		t0 := time.Now()
		res, err := loop.Train(len(runs), func(i int, fn func(int, []float32)) { runs[i].Observe = fn }, func(h int, idx []int) ([]kernel.Result2D, error) {
			spec := spec
			spec.Steps = h
			return kernel.TrainMFA(ctx, spec, tasks.Subset(runs, idx))
		})
		if err != nil {
			return out, fmt.Errorf("train point %d block %d (%s, %s, %d runs): %w", p.ID, b.Index, meth, p.Model, len(runs), err)
		}
		elapsed := time.Since(t0)
		for i, r := range res {
			tr := tasks.TrainedRun{Loss: float64(r.Loss), Diverged: r.Diverged, DivergedStep: int64(r.DivergedStep), Theta: r.Theta,
				BufferInBox: math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN(),
				CPUSeconds: math.NaN(), TrainBatch: int64(spec.Batch), TrainLR: lr, PxWeight: tasks.RunPxWeight(p.PxWeight, spec.PxWeight), Stats: r.Stats}
			if o.Timings {
				tr.CPUSeconds = r.CPUSeconds
				tr.TrainMS = float64(elapsed.Microseconds()) / 1000 / float64(len(res))
				if r.CPUSeconds > 0 {
					tr.TrainMS = r.CPUSeconds * 1000
				}
			}
			loop.Finish(i, &tr)
			out.Runs[i*m+j] = tr
		}
	}
	if o.Select != "" {
		tasks.FlagBlockAgainstBaseline(out.Runs, p.Methods)
	}
	s.env.Progressf(ctx, "train: point %d block %d (%s, %s): %d runs in %v", p.ID, b.Index, p.Task, p.Model, len(out.Runs), time.Since(start).Round(time.Millisecond))
	return out, nil
}

// mfaModel is a trained MFA model for the evaluation (model): pixels shifted as in
// training; its log Z is exact.
type mfaModel struct{ m *kernel.MFAModel }

func (a mfaModel) shift(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v - mfaShift
	}
	return out
}

func (a mfaModel) logits(x []float64, n int) ([]float64, error) {
	return a.m.Logits(a.shift(x), n, nil), nil
}

func (a mfaModel) Dim() int { return a.m.Dim() }

func (a mfaModel) LogDensityBatch(x []float64, n int, out, grad []float64) {
	f := a.m.Logits(a.shift(x), n, grad)
	K := len(f) / max(1, n)
	for i := range n {
		out[i] = logSumExp(f[i*K : (i+1)*K])
	}
}

// exactLogZ is the model's exact log Z (the evaluation's kl_joint).
func (a mfaModel) exactLogZ() float64 { return a.m.LogZ() }

// evaluateMFA measures every run of a block trained on the MFA model: the images
// measures (conditional KL, accuracy, ECE, OOD AUROCs, the Z-free divergences) and the
// exact joint KL with its standard error; no AIS.
func (s *source) evaluateMFA(tb tasks.TrainedBlock) (tasks.ResultBlock, tasks.LearnedBlock, error) {
	p := s.p
	rb := tasks.ResultBlock{PointID: p.ID, Index: tb.Block.Index, First: tb.Block.First, Rows: make([]schemas.ResultRow, len(tb.Runs))}
	lb := tasks.LearnedBlock{PointID: p.ID, Index: tb.Block.Index, Runs: make([]tasks.Learned, len(tb.Runs))}
	sp, err := mfaSpecOf(p)
	if err != nil {
		return rb, lb, err
	}
	var set *evalSet
	for r := range tb.Runs {
		t := tb.Trained(p, r)
		tab := t.Job.Dataset.Table
		if r%len(p.Methods) == 0 {
			tr, err := s.truth(tab)
			if err != nil {
				return rb, lb, err
			}
			if set, err = newEvalSet(tr, tasks.TableSeed(s.env.Options.Seed, tab), nil, nil); err != nil {
				return rb, lb, err
			}
		}
		row := newRow(t, set)
		row.AISTeacherLower, row.AISTeacherUpper, row.AISTeacherGap, row.AISAccepted = math.NaN(), math.NaN(), math.NaN(), false
		row.AISRefused = "not run: the MFA model's log Z is exact"
		var res *result
		if !t.Diverged {
			if mm, err := kernel.NewMFAModel(sp, t.Run.Theta); err == nil {
				r := set.measure(context.Background(), mfaModel{mm}, nil)
				r.fill(&row, nil)
				row.AISRefused = "not run: the MFA model's log Z is exact"
				row.LogZ = mm.LogZ()
				row.KLJoint, row.KLJointSE = r.Joint+row.LogZ, r.JointSE
				row.KLMarginal, row.KLMarginalSE = r.Marg+row.LogZ, r.MargSE
				res = &r
			}
		}
		row.Diverged, row.Nonfinite = tasks.RunStatus(t.Diverged, nil, row.KLJoint)
		tasks.SetRunColumns(&row, &t)
		if res != nil {
			res.fillZFree(&row)
		}
		rb.Rows[r] = row
		lb.Runs[r] = learned(p, t)
	}
	return rb, lb, nil
}

// MFAFromTruth is the MFA model's parameters (shifted pixels) that equal a truth
// exactly: a_y = log π_y, each class's components (padded with weight 0 up to C) with
// their loadings (padded with zero columns up to d). It errs when the truth does not fit
// in mfa:C,d. The known-answer tests load it to check the family holds the truth.
func MFAFromTruth(tr *mfa.Truth, c, d int) (kernel.MFASpec, []float32, error) {
	pr := tr.Params()
	K, D := tr.K(), tr.D()
	sp := kernel.MFASpec{K: K, C: c, Factors: d, Dim: D}
	if err := sp.Validate(); err != nil {
		return sp, nil, err
	}
	theta := make([]float32, sp.NumParams())
	oB, oMu := K, K+K*c
	oLam := oMu + K*c*D
	oRho := oLam + K*c*D*d
	for y, cl := range pr.Classes {
		theta[y] = float32(math.Log(pr.Pi[y]))
		if len(cl.Components) > c {
			return sp, nil, fmt.Errorf("class %d has %d components, the model %d", y, len(cl.Components), c)
		}
		for k := range c {
			j := y*c + k
			if k >= len(cl.Components) {
				theta[oB+j] = -60 // weight e^−60 relative: absent
				for i := range D {
					theta[oRho+j*D+i] = 0
				}
				continue
			}
			cp := cl.Components[k]
			theta[oB+j] = float32(math.Log(cp.Weight))
			nf := len(cp.Loadings) / D
			if nf > d {
				return sp, nil, fmt.Errorf("class %d component %d has %d factors, the model %d", y, k, nf, d)
			}
			for i := range D {
				theta[oMu+j*D+i] = float32(cp.Mean[i] - mfaShift)
				theta[oRho+j*D+i] = float32(math.Log(cp.Psi[i]))
				for a := range nf {
					theta[oLam+(j*D+i)*d+a] = float32(cp.Loadings[i*nf+a])
				}
			}
		}
	}
	return sp, theta, nil
}
