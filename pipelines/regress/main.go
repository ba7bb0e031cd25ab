// Command regress is the scheduled regression check of the JEM claim: many random
// tables (default 10,000) × {baseline, jem}, decided by thresholds:
//
//   - JEM's mean joint KL within --floor_factor of the floor (k−1)/(2N),
//   - the baseline-to-JEM ratio of mean joint KL at least --min_ratio,
//   - the paired Wilcoxon signed-rank p-value below --max_p.
//
// It prints one verdict line, writes verdict.json next to the usual outputs and exits
// 0 when the claim holds, 1 when it fails and 2 on an error. --jem_px_weight=0 turns
// JEM into the baseline, so the check must then fail.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
)

var flags = launch.RegisterFlags(flag.CommandLine, launch.Defaults{Tables: 10000, Methods: "baseline,jem", Out: "./out/regress"})

func main() {
	flag.Parse()
	beam.Init()
	if flag.NArg() > 0 {
		launch.Exit("regress", launch.BadInput("unexpected arguments %q", flag.Args()))
	}
	cfg, err := flags.Config("regress")
	if err != nil {
		launch.Exit("regress", err)
	}
	holds, err := run(context.Background(), cfg, os.Stdout)
	launch.Exit("regress", err)
	if !holds {
		os.Exit(1)
	}
}

// Verdict is verdict.json.
type Verdict struct {
	Holds         bool    `json:"holds"`
	Reason        string  `json:"reason"`
	Tables        int     `json:"tables"`
	Floor         float64 `json:"floor"`
	JEMMeanKL     float64 `json:"jem_mean_kl_joint"`
	BaseMeanKL    float64 `json:"baseline_mean_kl_joint"`
	FloorRatio    float64 `json:"jem_floor_ratio"`
	BaselineToJEM float64 `json:"baseline_to_jem"`
	WilcoxonP     float64 `json:"wilcoxon_p"`
	FloorFactor   float64 `json:"floor_factor"`
	MinRatio      float64 `json:"min_ratio"`
	MaxP          float64 `json:"max_p"`
	PxWeight      float64 `json:"jem_px_weight"`
	Seed          uint64  `json:"seed"`
}

// run runs the check and reports whether the claim holds.
func run(ctx context.Context, cfg launch.Config, w io.Writer) (bool, error) {
	if err := launch.Prepare(ctx, &cfg); err != nil {
		return false, err
	}
	for _, m := range []string{"baseline", "jem"} {
		if !contains(cfg.Points[0].Methods, m) {
			return false, launch.BadInput("methods: the regression check needs baseline and jem, got %v", cfg.Points[0].Methods)
		}
	}
	p, s := beam.NewPipelineWithRoot()
	launch.Experiment(s, &cfg, "JEM regression check")
	sum, err := launch.Execute(ctx, &cfg, p, w)
	if err != nil || sum == nil {
		return true, err
	}
	v := verdict(sum, cfg)
	b, err := schemas.OpenBucket(ctx, cfg.Options.Out)
	if err != nil {
		return false, err
	}
	defer b.Close()
	if err := schemas.WriteJSON(ctx, b, "verdict.json", v); err != nil {
		return false, fmt.Errorf("write verdict.json: %w", err)
	}
	fmt.Fprintf(w, "verdict: %s\n", v.Reason)
	fmt.Fprintf(w, "report: %s\n", launch.Location(cfg.Options.Out, "report.html"))
	return v.Holds, nil
}

func verdict(sum *schemas.Summary, cfg launch.Config) Verdict {
	th := cfg.Options.Thresholds
	ps := sum.Points[0]
	v := Verdict{Holds: sum.Verdict.Holds, Reason: sum.Verdict.Reason, Tables: ps.Tables, Floor: ps.Floor,
		FloorFactor: th.FloorFactor, MinRatio: th.MinRatio, MaxP: th.MaxP, PxWeight: cfg.Points[0].PxWeight,
		Seed: cfg.Options.Seed}
	for _, m := range ps.Methods {
		switch m.Method {
		case "jem":
			v.JEMMeanKL, v.FloorRatio = m.KLJoint.Mean, m.FloorRatio
		case "baseline":
			v.BaseMeanKL = m.KLJoint.Mean
		}
	}
	if c := ps.Comparison; c != nil {
		v.BaselineToJEM, v.WilcoxonP = c.BaselineToJEM, c.WilcoxonP
	}
	return v
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
