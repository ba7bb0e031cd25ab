package tasks

import (
	"errors"
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/verdict"
)

// Options are the run-wide settings every stage shares.
type Options struct {
	Seed       uint64 `json:"seed"`
	Out        string `json:"out"`
	TablesFrom string `json:"tables_from,omitempty"`
	TasksFrom  string `json:"tasks_from,omitempty"` // the user's 2-D tasks (Parquet or CSV); every point's task is then "file"
	EvalEvery  int    `json:"eval_every"`           // 2-D runs: the exact KL and held-out NLL every this many steps, to curves/ (0: every steps/30)
	// The protocol (protocol.go): the selection rule (heldout or last; "" where no kind
	// of the run selects) and the share of each task's draws held out from training.
	Select  string  `json:"select"`
	Holdout float64 `json:"holdout"`
	// The promises on 2-D tasks (see promises2d.go): the OOD draws, the attack's radius,
	// the purification's steps and step size.
	OOD          string  `json:"ood"`
	AttackEps    float64 `json:"attack_eps"`
	PurifySteps  int     `json:"purify_steps"`
	PurifyLR     float64 `json:"purify_lr"`
	TrainBatch   int     `json:"train_batch"`
	Backend      string  `json:"backend"`
	WriteSamples bool    `json:"write_samples"`
	Timings      bool    `json:"timings"`
	// AISChains and AISTemps set the annealed importance sampling of the kinds that bound
	// a joint KL by it (images): chains and temperatures, the same for the calibration on
	// the truth and for every model; 0 takes the kind's defaults (256, 1000).
	AISChains int `json:"ais_chains,omitempty"`
	AISTemps  int `json:"ais_temps,omitempty"`
	// MeasureTasks are the tasks of each 2-D point whose runs get the measures beyond
	// the exact KL (Options.Measures): the first this many task ordinals; 0 takes
	// DefaultMeasureTasks, AllTasks measures every task.
	MeasureTasks int `json:"measure_tasks,omitempty"`
	// SamplerChains are the chains of a measured 2-D run's sampler distribution (its short
	// run and its long chain; Options.Chains): 0 takes DefaultSamplerChains.
	SamplerChains int                `json:"sampler_chains,omitempty"`
	ReportTables  int                `json:"report_tables"`
	Thresholds    verdict.Thresholds `json:"thresholds"`
	// Logits is the user's logits file or folder of the points' external methods
	// (pipelines/evaluate; see schemas.ReadLogits), "" when no method is external.
	Logits string `json:"logits,omitempty"`
	// LogitsModel names the model of the logits' rows no column names (--model).
	LogitsModel string `json:"logits_model,omitempty"`
	// ONNX is the user's classifier as an ONNX file (a path or a gocloud.dev URL) of the
	// points' external methods on kinds that evaluate a model as a function
	// (ModelKind, ModelSource: images; pipelines/evaluate --onnx), "" otherwise.
	ONNX string `json:"onnx,omitempty"`
}

// quote quotes a user's value for a message, cut to 80 characters.
func quote(s string) string { return methods.Quote(s) }

// Validate checks a resolved point: its methods (known, and training on the point's
// kind), their sampler options, then the kind's own checks (Kind.Validate).
func (p Point) Validate() error {
	k, err := Of(p.Task)
	if err != nil {
		return err
	}
	if len(p.Methods) == 0 {
		return errors.New("no methods given")
	}
	for _, m := range p.Methods {
		if err := methods.Check(m, MethodKindOf(k, p), "task "+p.Task+" (model "+p.Model+")"); err != nil {
			return err
		}
	}
	switch {
	case p.Replicate < 0:
		return fmt.Errorf("replicate must be >= 0, got %d", p.Replicate)
	case math.IsNaN(p.LR) || math.IsInf(p.LR, 0) || p.LR <= 0:
		return fmt.Errorf("lr must be a finite number > 0, got %v", p.LR)
	case math.IsNaN(p.PxWeight) || math.IsInf(p.PxWeight, 0) || p.PxWeight < 0:
		return fmt.Errorf("jem_px_weight must be a finite number >= 0, got %v", p.PxWeight)
	}
	if err := methods.CheckOptions(p.Methods, p.Grid); err != nil {
		return err
	}
	return k.Validate(p.WithoutExternal()) // a kind validates what it trains; a user's model is checked by tasks.ReadExternal
}

// Validate checks the run-wide options.
func (o Options) Validate() error {
	switch {
	case o.Out == "":
		return errors.New("out: no output location given")
	case o.TrainBatch < 1:
		return fmt.Errorf("train_batch must be >= 1, got %d", o.TrainBatch)
	case o.ReportTables < 0:
		return fmt.Errorf("report_tables must be >= 0, got %d", o.ReportTables)
	case o.EvalEvery < 0:
		return fmt.Errorf("eval_every must be >= 0 (0 = no curves), got %d", o.EvalEvery)
	case o.TablesFrom != "" && o.TasksFrom != "":
		return errors.New("tables_from and tasks_from: give one of them (tables are discrete, tasks continuous 2-D)")
	}
	if err := o.checkPromiseOptions(); err != nil {
		return err
	}
	if o.Select != "" {
		if err := o.validateProtocol(); err != nil {
			return err
		}
	}
	t := o.Thresholds
	for _, c := range []struct {
		name string
		v    float64
		ok   bool
	}{
		{"margin", t.Margin, t.Margin > 0},
		{"max_p", t.MaxP, t.MaxP > 0 && t.MaxP <= 1},
		{"max_sampler_excess", t.MaxSamplerExcess, t.MaxSamplerExcess >= 0},
	} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || !c.ok {
			return fmt.Errorf("%s: invalid value %v", c.name, c.v)
		}
	}
	return nil
}

// PointFile is the key of a point's file named name: name.parquet for a single-point
// run, name/point-NNNN.parquet when a sweep has several points.
func PointFile(name string, pointID int64, multiPoint bool) string {
	if !multiPoint {
		return name + ".parquet"
	}
	return fmt.Sprintf("%s/point-%04d.parquet", name, pointID)
}
