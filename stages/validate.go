package stages

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/prob"
)

// Options are the run-wide settings every stage shares.
type Options struct {
	Seed       uint64 `json:"seed"`
	Out        string `json:"out"`
	TablesFrom string `json:"tables_from,omitempty"`
	TasksFrom  string `json:"tasks_from,omitempty"` // the user's 2-D tasks (Parquet or CSV); every point's task is then "file"
	EvalEvery  int    `json:"eval_every"`           // 2-D runs: the exact KL on the grid every this many steps, to curves/ (0: off)
	// The promises on 2-D tasks (see promises2d.go): the OOD draws, the attack's radius,
	// the purification's steps and step size.
	OOD          string     `json:"ood"`
	AttackEps    float64    `json:"attack_eps"`
	PurifySteps  int        `json:"purify_steps"`
	PurifyLR     float64    `json:"purify_lr"`
	TrainBatch   int        `json:"train_batch"`
	Backend      string     `json:"backend"`
	WriteSamples bool       `json:"write_samples"`
	Timings      bool       `json:"timings"`
	ReportTables int        `json:"report_tables"`
	Thresholds   Thresholds `json:"thresholds"`
}

// Thresholds decide the verdict (see Summarize): the JEM claim holds at a point when the
// upper ends of the bootstrap 95% CIs of JEM's optimisation gap, of q(x)'s optimisation
// gap and of the family's approximation error, each as a share of the statistical error
// of the same tables, are at most Margin. MaxP is the level of the secondary line, the
// paired Wilcoxon test of baseline against JEM, which is reported but does not decide.
type Thresholds struct {
	Margin float64 `json:"margin"`
	MaxP   float64 `json:"max_p"`
	// MaxSamplerExcess, when > 0, gates each sampler method on its excess joint KL over
	// exact JEM in nats: the upper end of the 95% CI of the mean excess must be at most
	// this (a deciding check beside the relative one). 0 = no such gate.
	MaxSamplerExcess float64 `json:"max_sampler_excess,omitempty"`
}

// DefaultThresholds are the documented defaults, fixed in advance: a margin of 10% of
// the statistical error, and p < 0.01 for the secondary line.
func DefaultThresholds() Thresholds {
	return Thresholds{Margin: 0.10, MaxP: 0.01}
}

// Encodings and methods the trainer knows.
var (
	Encodings  = []string{"scalar", "onehot"}
	AllMethods = []string{MethodBaseline, MethodJEM, MethodOracle, MethodSGLD, MethodPCD, MethodPCDExact}
)

// ParseMethods parses a comma-separated method list.
func ParseMethods(s string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !slices.Contains(AllMethods, m) {
			return nil, fmt.Errorf("unknown method %s (known: %s)", quote(m), strings.Join(AllMethods, ", "))
		}
		if slices.Contains(out, m) {
			return nil, fmt.Errorf("method %s listed twice", quote(m))
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no methods given")
	}
	return out, nil
}

// quote quotes a user's value for a message, cut to 80 characters.
func quote(s string) string {
	if r := []rune(s); len(r) > 80 {
		return fmt.Sprintf("%q... (%d characters)", string(r[:80]), len(r))
	}
	return fmt.Sprintf("%q", s)
}

// Shape is the training shape of a point's runs for a method (the oracle always
// trains full batch on the true table).
func (p Point) Shape(method string) models.Shape {
	sh := models.Shape{XValues: p.XValues, Classes: p.Classes, Encoding: p.Encoding,
		Model: p.Model, Steps: p.Steps, BatchSize: p.BatchSize}
	if method == MethodOracle {
		sh.BatchSize = 0
	}
	return sh
}

// Validate checks every field of a point, and the limits on a point that hold on every
// runner (see Limits); the error names the offending field.
func (p Point) Validate() error {
	for _, m := range p.Methods {
		if err := p.checkMethod(m); err != nil {
			return err
		}
	}
	if err := p.validateSampler(); err != nil {
		return err
	}
	if p.Is2D() {
		return p.validate2D()
	}
	switch {
	case p.XValues < 1:
		return fmt.Errorf("x_values must be >= 1, got %d", p.XValues)
	case p.Classes < 2:
		return fmt.Errorf("classes must be >= 2, got %d", p.Classes)
	case p.XValues > MaxCells || p.Classes > MaxCells || p.XValues*p.Classes > MaxCells:
		return fmt.Errorf("x_values*classes = %s cells is too many (max %d)", count(SatMul(int64(p.XValues), int64(p.Classes))), MaxCells)
	case p.Samples < 1:
		return fmt.Errorf("samples must be >= 1, got %d", p.Samples)
	case p.Steps < 1:
		return fmt.Errorf("steps must be >= 1, got %d", p.Steps)
	case p.Tables < 1:
		return fmt.Errorf("tables must be >= 1, got %d", p.Tables)
	case p.BatchSize < 0:
		return fmt.Errorf("batch_size must be >= 0 (0 = full batch), got %d", p.BatchSize)
	case p.BatchSize > p.Samples:
		return fmt.Errorf("batch_size %d exceeds samples %d", p.BatchSize, p.Samples)
	case p.Replicate < 0:
		return fmt.Errorf("replicate must be >= 0, got %d", p.Replicate)
	case math.IsNaN(p.LR) || math.IsInf(p.LR, 0) || p.LR <= 0:
		return fmt.Errorf("lr must be a finite number > 0, got %v", p.LR)
	case math.IsNaN(p.PxWeight) || math.IsInf(p.PxWeight, 0) || p.PxWeight < 0:
		return fmt.Errorf("jem_px_weight must be a finite number >= 0, got %v", p.PxWeight)
	case !slices.Contains(Encodings, p.Encoding):
		return fmt.Errorf("unknown encoding %q (known: %s)", p.Encoding, strings.Join(Encodings, ", "))
	}
	if p.Generator != GeneratorFile {
		if _, err := prob.ParseGenerator(p.Generator); err != nil {
			return fmt.Errorf("generator: %w", err)
		}
	}
	if _, err := models.ParseModel(p.Model); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if len(p.Methods) == 0 {
		return errors.New("no methods given")
	}
	for _, m := range p.Methods {
		if err := p.checkMethod(m); err != nil {
			return err
		}
		if err := p.Shape(m).Validate(); err != nil {
			return err
		}
	}
	return p.checkPointLimits()
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

// GeneratorFile marks tables read from --tables_from.
const GeneratorFile = "file"
