package plane

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// The kind is described in doc.go; how its methods are trained and scored alike, in
// tasks/protocol.go.

// The 2-D defaults: the values a 2-D point takes for the axes the user did not set
// (the table defaults — a linear model, 300 steps of lr 0.05 on full batches — do
// not suit an MLP on 2-D draws). They are the SGLD probe's settings.
var taskDefaults2D = []struct {
	Axis string
	set  func(p *tasks.Point)
}{
	{"model", func(p *tasks.Point) { p.Model = "mlp:32,32" }},
	{"lr", func(p *tasks.Point) { p.LR = 3e-3 }},
	{"steps", func(p *tasks.Point) { p.Steps = 1500 }},
	{"batch_size", func(p *tasks.Point) { p.BatchSize = 64 }},
	{"samples", func(p *tasks.Point) { p.Samples = 2000 }},
}

// Default2DTables is the number of tasks of a 2-D point when the user did not say.
const Default2DTables = 100

// Limits of a 2-D point.
const (
	MaxGrid = 256 // evaluation grid cells per side (and X·K ≤ tasks.MaxCells)
	MinBox  = 1.0 // the box's half-width: a random gmm's components are then at most 5 sd from it
	MaxBox  = 1e3

	// MinShapeSigma is the least noise of moons and circles: their truth is a mixture of
	// a Gaussian every σ/8 along the curves (about 5,000 at the limit).
	MinShapeSigma = 0.02
)

// Validate checks a 2-D point.
func (Kind) Validate(p tasks.Point) error {
	if p.Task != tasks.TaskFile {
		spec, err := prob.ParseTaskSpec(p.Task)
		if err != nil {
			return fmt.Errorf("task: %w", err)
		}
		if spec.Kind != "gmm" && spec.Sigma < MinShapeSigma {
			return fmt.Errorf("task %s: SIGMA must be at least %g (the truth is a quadrature over the curve with a node every sixteenth of the noise)", p.Task, MinShapeSigma)
		}
	}
	switch {
	case p.GridCells < 4 || p.GridCells > MaxGrid:
		return fmt.Errorf("grid must be in [4, %d] cells per side, got %d", MaxGrid, p.GridCells)
	case p.XValues != p.GridCells*p.GridCells:
		return fmt.Errorf("a 2-D point has x_values = grid² = %d, got %d", p.GridCells*p.GridCells, p.XValues)
	case p.Classes < 2:
		return fmt.Errorf("classes must be >= 2, got %d", p.Classes)
	case p.XValues*p.Classes > tasks.MaxCells:
		return fmt.Errorf("grid %d with %d classes is %d grid cells × classes, over the limit of %d (use a smaller --grid)",
			p.GridCells, p.Classes, p.XValues*p.Classes, tasks.MaxCells)
	case !(p.Box >= MinBox && p.Box <= MaxBox):
		return fmt.Errorf("box must be in [%g, %g], got %v", MinBox, MaxBox, p.Box)
	case p.Samples < 1:
		return fmt.Errorf("samples must be >= 1, got %d", p.Samples)
	case p.Samples > tasks.MaxHeldSamples:
		return fmt.Errorf("samples: %d draws per task is over the limit of %d (2-D draws are held in memory)", p.Samples, tasks.MaxHeldSamples)
	case p.Steps < 1 || p.Steps > tasks.MaxSteps:
		return fmt.Errorf("steps must be in [1, %d], got %d", tasks.MaxSteps, p.Steps)
	case p.Tables < 1 || p.Tables > tasks.MaxTables:
		return fmt.Errorf("tables (tasks) must be in [1, %d], got %d", tasks.MaxTables, p.Tables)
	}
	if _, err := models.ParseModel(p.Model); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	for _, m := range p.Methods {
		s, err := spec2D(p, m, 0)
		if err != nil {
			return err
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("method %s: %s", m, strings.TrimPrefix(err.Error(), "kernel: "))
		}
	}
	return nil
}

// evalGrid is a 2-D point's evaluation grid.
func evalGrid(p tasks.Point) prob.Grid { return prob.Grid{G: p.GridCells, Box: p.Box} }

// spec2D is the 2-D kernel's spec of method m at p (observe: eval_every, 0 = none):
// the point's shared settings, then the method's part, set by its hook. A method
// trains on 2-D tasks by registering methods.KindPlane's hook, of type
// func(schemas.Grid, *kernel.Spec2D) error (block tasks call the same hook type).
func spec2D(p tasks.Point, m string, observe int) (kernel.Spec2D, error) {
	hidden, _ := models.ParseModel(p.Model)
	s := kernel.Spec2D{Hidden: hidden, K: p.Classes, Steps: p.Steps, Batch: p.BatchSize, PxWeight: float32(p.PxWeight),
		Box: float32(p.Box), ObserveEvery: observe}
	return s, Hook(m, methods.KindPlane, p, &s)
}

// Hook calls method m's hook for the fused kernels of kind (plane or blocks: the
// methods.Plane or methods.Blocks plug) on s.
func Hook(m, kind string, p tasks.Point, s *kernel.Spec2D) error {
	plug := methods.Plane
	if kind == methods.KindBlocks {
		plug = methods.Blocks
	}
	h, ok := plug.Of(m)
	if !ok {
		return fmt.Errorf("method %s has no trainer for %s", methods.Quote(m), methods.KindNoun(kind))
	}
	if err := h(p.Grid, s); err != nil {
		return fmt.Errorf("method %s: %w", m, err)
	}
	s.Batch = tasks.RunBatch(m, s.Batch, p.Samples)
	return nil
}

// Seed tags of the 2-D tasks.
var (
	tagTask = prob.SeedString("task")
	tagInit = prob.SeedString("init")
)

// taskSource gives a 2-D point's task of each ordinal: a draw of its spec seeded by
// (run seed, task, replicate, ordinal), or the user's task of that ordinal (in id
// order) from --tasks_from, read once per DoFn instance.
type taskSource struct {
	spec prob.TaskSpec
	user []prob.Task2D
	ids  []int64
}

// newTaskSource builds a 2-D point's task source (the user's tasks read from tasksFrom
// when the point's task is "file").
func newTaskSource(ctx context.Context, p tasks.Point, tasksFrom string) (*taskSource, error) {
	if p.Task == tasks.TaskFile {
		user, ids, err := schemas.ReadTasks(ctx, tasksFrom)
		if err != nil {
			return nil, err
		}
		return &taskSource{user: user, ids: ids}, nil
	}
	spec, err := prob.ParseTaskSpec(p.Task)
	if err != nil {
		return nil, err
	}
	return &taskSource{spec: spec}, nil
}

// task returns the task of ordinal o of point p and its id.
func (s *taskSource) task(runSeed uint64, p tasks.Point, o int64) (prob.Task2D, int64, error) {
	if s.user != nil {
		if o >= int64(len(s.user)) {
			return prob.Task2D{}, 0, fmt.Errorf("point %d: task %d of %d read from the tasks file", p.ID, o, len(s.user))
		}
		return s.user[o], s.ids[o], nil
	}
	return s.spec.Draw(tasks.TableSeed(runSeed, tasks.Table{Point: p, Ordinal: o})), o, nil
}

// truth2D is the task's joint on the point's grid, or an error when the box holds
// (numerically) none of its mass.
func truth2D(p tasks.Point, t prob.Task2D, id int64) ([]float64, error) {
	kernel.ClearUpper()
	g := evalGrid(p)
	if m := t.BoxMass(g); !(m > 0) {
		return nil, fmt.Errorf("task %d (%s): the box [−%g, %g]² holds %.3g of its mass; use a larger --box", id, t, p.Box, p.Box, m)
	}
	return t.Truth(g), nil
}

// draws2D are a task's N draws (the dataset of table t), in float32 for the kernel.
func draws2D(runSeed uint64, t tasks.Table, task prob.Task2D) (x0, x1 []float32, y []int32) {
	d := task.Sample(tasks.SampleSeed(runSeed, t), t.Point.Samples)
	x0, x1 = make([]float32, len(d.Y)), make([]float32, len(d.Y))
	for i := range d.Y {
		x0[i], x1[i] = float32(d.X0[i]), float32(d.X1[i])
	}
	return x0, x1, d.Y
}

// Train trains every run of a 2-D block: one kernel.Train2D call per method, the
// block's tasks its runs. Every method of a task starts from the same parameters
// (seeded by the task, not the method), so the methods are paired from the start.
func (s *source) Train(ctx context.Context, b tasks.Block) (tasks.TrainedBlock, error) {
	p, seed, o := s.p, s.env.Options.Seed, s.env.Options
	start := time.Now()
	m := len(p.Methods)
	out := tasks.TrainedBlock{Block: b, Runs: make([]tasks.TrainedRun, b.Len()*m)}
	src := s.tasks
	hidden, _ := models.ParseModel(p.Model)
	g := evalGrid(p)
	cells := p.XValues * p.Classes
	type data struct {
		task      prob.Task2D
		x0, x1    []float32
		y         []int32
		hx0, hx1  []float32 // the held-out draws (protocol.go)
		hy        []int32
		truth     []float64
		tableSeed uint64
		t         tasks.Table
	}
	ds := make([]data, b.Len())
	for i := range b.Len() {
		t := b.Table(p, i)
		task, _, err := src.task(seed, p, t.Ordinal)
		if err != nil {
			return out, err
		}
		x0, x1, y := draws2D(seed, t, task)
		n := len(y)
		if o.Select != "" { // the last draws are held out, the same for every method
			n = o.HoldoutSplit(len(y))
		}
		ds[i] = data{task: task, x0: x0[:n], x1: x1[:n], y: y[:n], hx0: x0[n:], hx1: x1[n:], hy: y[n:],
			truth: b.P[i*cells : (i+1)*cells], tableSeed: tasks.TableSeed(seed, t), t: t}
	}
	every := o.CheckEvery(p.Steps)
	for j, meth := range p.Methods {
		spec, err := spec2D(p, meth, every)
		if err != nil {
			return out, err
		}
		if len(ds) > 0 { // the converged yardstick: full batches of the training draws
			spec.Batch = tasks.RunBatch(meth, spec.Batch, len(ds[0].y))
		}
		perStep := spec.GradEvalsPerStep(2)
		runs := make([]kernel.Run2D, len(ds))
		seen := make([]observed, len(ds)) // each run's last check: its parameters and cell logits
		lr := tasks.RunLR(meth, p.LR)
		loop := tasks.MethodLoop{Method: meth, Steps: spec.Steps, Select: o.Select, PerStep: perStep,
			Check: func(i int, theta []float32) (tasks.CurvePoint, []float64) {
				lg, err := kernel.CellLogits(hidden, p.Classes, theta, g.G, g.Box)
				if err != nil {
					return tasks.CurvePoint{KLJoint: math.NaN(), KLMarginal: math.NaN(), KLConditional: math.NaN(), HeldoutNLL: math.NaN()}, nil
				}
				seen[i] = observed{theta: append(seen[i].theta[:0], theta...), logits: lg}
				kj, km, kc := prob.GridKL(ds[i].truth, prob.Softmax(lg), p.Classes)
				return tasks.CurvePoint{KLJoint: kj, KLMarginal: km, KLConditional: kc, HeldoutNLL: heldoutNLL(g, p.Classes, lg, ds[i].hx0, ds[i].hx1, ds[i].hy)}, lg
			}}
		for i := range ds {
			d := &ds[i]
			r := kernel.Run2D{Seed: tasks.TrainSeed(seed, d.t, meth), Theta: kernel.InitMLP2D(prob.Seed(d.tableSeed, tagInit), hidden, p.Classes),
				LR: float32(lr), X0: d.x0, X1: d.x1, Y: d.y}
			if methods.Has(meth, fresh) {
				task := d.task
				r.X0, r.X1, r.Y = nil, nil, nil
				r.Fresh = func(rng *rand.Rand, x0, x1 []float32, y []int32) {
					fresh := task.Sample(rng.Uint64(), len(y))
					for k := range y {
						x0[k], x1[k], y[k] = float32(fresh.X0[k]), float32(fresh.X1[k]), fresh.Y[k]
					}
				}
			}
			runs[i] = r
		}
		start := time.Now()
		res, err := loop.Train(len(runs), func(i int, fn func(int, []float32)) { runs[i].Observe = fn }, func(h int, idx []int) ([]kernel.Result2D, error) {
			spec := spec
			spec.Steps = h
			return kernel.Train2D(ctx, spec, tasks.Subset(runs, idx))
		})
		perRun := 0.0
		if o.Timings { // wall time of the method's call over its runs (Train2D spreads them over the cores)
			perRun = float64(time.Since(start).Microseconds()) / 1000 / float64(len(runs))
		}
		if err != nil {
			return out, fmt.Errorf("train point %d block %d (%s, %d runs): %w", p.ID, b.Index, meth, len(runs), err)
		}
		var sd []sdJob
		for i, r := range res {
			lg, err := seen[i].logits, error(nil)
			if !slices.Equal(seen[i].theta, r.Theta) { // the last check did not see the final parameters
				lg, err = kernel.CellLogits(hidden, p.Classes, r.Theta, g.G, g.Box)
			}
			if err != nil {
				return out, fmt.Errorf("train point %d block %d (%s): %w", p.ID, b.Index, meth, err)
			}
			ms := perRun // the run's own CPU ms where the kernel measured it, else the call's wall time per run
			cpu := math.NaN()
			if o.Timings && !math.IsNaN(r.CPUSeconds) {
				ms, cpu = 1000*r.CPUSeconds, r.CPUSeconds
			}
			tr := tasks.TrainedRun{Logits: lg, Loss: float64(r.Loss), Diverged: r.Diverged, DivergedStep: int64(r.DivergedStep), Theta: r.Theta, TrainMS: ms,
				BufferInBox: math.NaN(), BufferTVTruth: math.NaN(), BufferTVModel: math.NaN(), KLJointAveraged: math.NaN(), RefGap: math.NaN(),
				CPUSeconds: cpu, TrainBatch: int64(spec.Batch), TrainLR: lr, PxWeight: tasks.RunPxWeight(p.PxWeight, spec.PxWeight), Stats: exactLogZ(r.Stats, lg, g)}
			loop.Finish(i, &tr) // the curve to its last step, the selection, ref_gap
			if r.Buffer != nil {
				tr.BufferInBox = r.InBox
				tr.BufferTVTruth, tr.BufferTVModel = bufferTV2D(g, p.Classes, r.Buffer, ds[i].truth, lg)
				tr.Buffer = r.Buffer // for the samples promise; Evaluate keeps it for the report's runs only
			}
			out.Runs[i*m+j] = tr
			if !o.Measures(ds[i].t.Ordinal) {
				continue
			}
			sd = append(sd, sdJob{run: &out.Runs[i*m+j], truth: ds[i].truth, seed: tasks.TrainSeed(seed, ds[i].t, meth), adapt: r.StepSize,
				draws: kernel.Draws2D{X0: ds[i].x0, X1: ds[i].x1, Y: ds[i].y, K: p.Classes}, logits: tr.Logits, theta: tr.Theta})
		}
		sdStart := time.Now() // the sampler's own distribution, on the selected models (samplerdist.go)
		if err := measureSamplerDist(p, meth, o.Chains(), sd); err != nil {
			return out, fmt.Errorf("train point %d block %d (%s): sampler distribution: %w", p.ID, b.Index, meth, err)
		}
		s.env.Progressf(ctx, "train: point %d block %d: %s sampler distribution of %d runs in %v", p.ID, b.Index, meth, len(sd), time.Since(sdStart).Round(100*time.Millisecond))
		s.env.Progressf(ctx, "train: point %d block %d: %s %d runs in %v (%d of %d methods)", p.ID, b.Index, meth, len(runs), time.Since(start).Round(100*time.Millisecond), j+1, m)
	}
	if o.Select != "" {
		tasks.FlagBlockAgainstBaseline(out.Runs, p.Methods)
	}
	s.env.Progressf(ctx, "train: point %d block %d (%s): %d runs in %v", p.ID, b.Index, p.Task, len(out.Runs), time.Since(start).Round(time.Millisecond))
	return out, nil
}

// observed is a run's last check (Run2D.Observe): the parameters it saw and their cell
// logits, which are the final logits when the run ends at that check (the logits are a
// function of the parameters alone, so the run's end needs no second evaluation).
type observed struct {
	theta  []float32
	logits []float64
}

// isReference2D says whether method m is an exact reference of a 2-D point (jem,
// jem-converged, oracle): its rows carry the curve's convergence gap (ref_gap).
func isReference2D(m string) bool {
	return methods.Has(m, func(x methods.Method) bool { return x.Reference })
}

// The roles the 2-D trainer asks about.
func fresh(m methods.Method) bool { return m.Fresh }

// heldoutNLL is the mean −log q(x, y) of the held-out draws under the learned joint
// normalised on grid g (logits [cell][K]), per unit area: −log softmax(logits)[cell, y]
// + log h² (a draw outside the box counts at its nearest cell). NaN with no draws.
func heldoutNLL(g prob.Grid, k int, logits []float64, x0, x1 []float32, y []int32) float64 {
	if len(y) == 0 {
		return math.NaN()
	}
	lse := prob.LogSumExp(logits)
	h := g.Step()
	var s float64
	for i := range y {
		c := g.Cell(clampBox(float64(x0[i]), g.Box, h), clampBox(float64(x1[i]), g.Box, h))
		s += lse - logits[c*k+int(y[i])]
	}
	return s/float64(len(y)) + math.Log(h*h)
}

// clampBox moves v into the box's cells (half a cell inside its edge).
func clampBox(v, box, h float64) float64 { return min(max(v, -box+h/2), box-h/2) }

// tvPool is the side of the coarse grid the buffer's distances are taken on: the
// largest divisor of G up to 16. The TV of n perfect samples is not 0: its expected
// value is prob.TVFloor of the pooled p(x) (scripts/tvfloor prints it per run: about
// 0.03 for a 10,000-sample buffer and 0.08–0.10 for 1,000 chains on these tasks).
func tvPool(G int) int {
	for c := min(G, 16); c > 1; c-- {
		if G%c == 0 {
			return c
		}
	}
	return 1
}

// bufferTV2D is the total-variation distance of the buffer's in-box samples, pooled
// on the tvPool grid, from the true p(x) and from the model's q(x) (from its grid
// logits), NaN when no sample is in the box.
func bufferTV2D(g prob.Grid, k int, buf []float32, truth, logits []float64) (tvTruth, tvModel float64) {
	c := tvPool(g.G)
	pool := func(cell int) int { i, j := cell/g.G, cell%g.G; return (i*c/g.G)*c + j*c/g.G }
	hist := make([]float64, c*c)
	n := 0
	for s := 0; s+1 < len(buf); s += 2 {
		if cell := g.Cell(float64(buf[s]), float64(buf[s+1])); cell >= 0 {
			hist[pool(cell)]++
			n++
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	px, qx := make([]float64, c*c), make([]float64, c*c)
	q := prob.Softmax(logits)
	for cell := range g.Cells() {
		for y := range k {
			px[pool(cell)] += truth[cell*k+y]
			qx[pool(cell)] += q[cell*k+y]
		}
	}
	for i := range hist {
		hist[i] /= float64(n)
	}
	return prob.TotalVariation(hist, px), prob.TotalVariation(hist, qx)
}

// checkTasks refuses, before anything runs, a 2-D point whose exact truth cannot be
// trusted on its grid (issue 19, points 1 and 2): every task of the point (the seeded
// draws of its spec, or the user's tasks from --tasks_from) must
//   - leave at most prob.MaxOutsideMass of its mass outside the box (exact JEM
//     normalises on the box; a draw outside it makes its loss no likelihood), the
//     message naming the mass outside and the box that would hold it;
//   - be resolved by the evaluation grid: every component's sd at least
//     prob.MinResolution cell widths, where the model's cell masses (prob.CellRule)
//     agree with the exact ones to prob.MaxResolutionFloor nats, the message naming the
//     --grid that would resolve it;
//   - for exact jem and oracle, be resolved by the training grid likewise (the Riemann
//     sum of Z on a shifted grid), naming the --train_grid that would.
func checkTasks(p tasks.Point, runSeed uint64, ts []prob.Task2D, ids []int64) error {
	if p.Task != tasks.TaskFile {
		spec, err := prob.ParseTaskSpec(p.Task)
		if err != nil {
			return err
		}
		ts, ids = make([]prob.Task2D, p.Tables), make([]int64, p.Tables)
		for o := range p.Tables {
			ts[o], ids[o] = spec.Draw(tasks.TableSeed(runSeed, tasks.Table{Point: p, Ordinal: int64(o)})), int64(o)
		}
	}
	g := evalGrid(p)
	usesTrainGrid := p.TrainGrid > 0 && slices.ContainsFunc(p.Methods, isReference2D)
	for i, t := range ts {
		name := fmt.Sprintf("task %d (%s)", ids[i], t)
		if out := t.OutsideMass(p.Box); out > prob.MaxOutsideMass {
			hold := 0.0 // the box that holds every task of the point
			for _, u := range ts {
				hold = max(hold, u.HoldingBox())
			}
			return fmt.Errorf("box: %s puts %.3g of its mass outside the box [−%g, %g]² (at most %g allowed: exact JEM normalises on the box); --box=%g holds every task of the point",
				name, out, p.Box, p.Box, prob.MaxOutsideMass, hold)
		}
		sd := t.MinSD()
		if need := gridFor(sd, p.Box, 1); sd < prob.MinResolution*g.Step() {
			return fmt.Errorf("grid: %s has a component of sd %.3g, narrower than the %d×%d grid over [−%g, %g]² resolves (sd ≥ %g cell widths of %.3g); %s",
				name, sd, g.G, g.G, p.Box, p.Box, prob.MinResolution, g.Step(), gridAdvice("--grid", need, MaxGrid, p.Box))
		}
		if usesTrainGrid {
			h := 2 * p.Box / float64(p.TrainGrid)
			if need := gridFor(sd, p.Box, 4); sd < prob.MinResolution*h {
				return fmt.Errorf("train_grid: %s has a component of sd %.3g, narrower than exact JEM's %d×%d training grid resolves (sd ≥ %g cell widths of %.3g); %s",
					name, sd, p.TrainGrid, p.TrainGrid, prob.MinResolution, h, gridAdvice("--train_grid", need, MaxTrainGrid, p.Box))
			}
		}
	}
	return nil
}

// MaxTrainGrid is the largest training grid per side exact JEM accepts.
const MaxTrainGrid = 256

// gridFor is the least number of cells per side, a multiple of mult, whose cells over
// [−box, box] are at most sd/prob.MinResolution wide.
func gridFor(sd, box float64, mult int) int {
	n := int(math.Ceil(2 * box * prob.MinResolution / sd))
	return (n + mult - 1) / mult * mult
}

// gridAdvice names the grid that would resolve a task, or says none within the limit does.
func gridAdvice(flag string, need, limit int, box float64) string {
	if need <= limit {
		return fmt.Sprintf("%s=%d resolves it", flag, need)
	}
	return fmt.Sprintf("that needs %s=%d, over the limit of %d: use a smaller --box than %g or wider components", flag, need, limit, box)
}

// other is the OOD task of --ood=other-task for the task of ordinal o: a further draw of
// the spec (the ordinal o + Tables, not a task of the run), or the next user task.
func (s *taskSource) other(runSeed uint64, p tasks.Point, o int64) prob.Task2D {
	if s.user != nil {
		return s.user[(o+1)%int64(len(s.user))]
	}
	return s.spec.Draw(tasks.TableSeed(runSeed, tasks.Table{Point: p, Ordinal: o + int64(p.Tables)}))
}

// exactLogZ adds to a method's stats that report a learned log Z (log_z_learned) the
// exact log Z of the same final parameters over the box (log_z_exact: the cell
// logits' log-sum-exp plus the log cell area), so the two sit side by side.
func exactLogZ(stats map[string]float64, cellLogits []float64, g prob.Grid) map[string]float64 {
	if _, ok := stats["log_z_learned"]; !ok {
		return stats
	}
	mx := math.Inf(-1)
	for _, v := range cellLogits {
		mx = max(mx, v)
	}
	var z float64
	for _, v := range cellLogits {
		z += math.Exp(v - mx)
	}
	h := 2 * g.Box / float64(g.G)
	stats["log_z_exact"] = mx + math.Log(z) + 2*math.Log(h)
	return stats
}
