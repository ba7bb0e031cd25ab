// Command regress is the scheduled regression check of the JEM claim: many random
// tables (default 10,000) × {baseline, jem}. The claim holds when the upper ends of
// table-bootstrap 95% CIs of three ratios of sums over the tables are all at most
// --margin (default 0.10):
//
//   - JEM's optimisation gap (KL(p̂‖q) minus the family's best on the same data) over
//     the statistical error (the exact expected KL of the add-½ reference minus the
//     family's approximation error),
//   - q(x)'s optimisation gap over the exact expected KL of the add-½ estimate of p(x),
//   - the model family's approximation error over the statistical error.
//
// A failure names its cause (steps, minibatch, px_weight, model_family, or tables: too
// few to decide). The paired excess over the add-½ reference on the same counts and
// the paired Wilcoxon test of baseline against JEM (p < --max_p) are reported but do
// not decide.
//
// It prints one verdict line, writes verdict.json next to the usual outputs and exits
// 0 when the claim holds, 1 when it fails and 2 on an error or an undecided verdict
// (too many diverged runs to decide). --jem_px_weight=0 turns
// JEM into the baseline, so the check must then fail.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/jemcheck/jemcheck/methods"
	"io"
	"os"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/stages"
)

var flags = launch.RegisterFlags(flag.CommandLine, launch.Defaults{Tables: 10000, Methods: "baseline,jem", Out: "./out/regress"})

func main() {
	flag.Parse()
	beam.Init()
	launch.Logging(os.Stderr)
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

// run runs the check and reports whether the claim holds.
func run(ctx context.Context, cfg launch.Config, w io.Writer) (bool, error) {
	sum, err := launch.Run(ctx, &cfg, func(s beam.Scope, cfg *launch.Config) error {
		for _, m := range []string{methods.Baseline(), methods.Yardstick()} {
			if !slices.Contains(cfg.Points[0].Methods, m) {
				return launch.BadInput("methods: the regression check needs baseline and jem, got %v", cfg.Points[0].Methods)
			}
		}
		build(s, cfg)
		return nil
	}, w)
	if err != nil || sum == nil {
		return true, err // a dry run or an --async submission: the job writes verdict.json
	}
	fmt.Fprintf(w, "verdict: %s\n", sum.Verdict.Reason)
	fmt.Fprintf(w, "report: %s\n", launch.Location(cfg.Options.Out, "report.html"))
	if !sum.Verdict.Decided {
		return false, fmt.Errorf("the check could not decide: %s", sum.Verdict.Reason)
	}
	return sum.Verdict.Holds, nil
}

// build is the regression DAG: the control experiment's stages, then WriteVerdict.
func build(s beam.Scope, cfg *launch.Config) {
	summaries, written := launch.Experiment(s, cfg, "JEM regression check")
	verdict := stages.WriteVerdict(s, cfg.StageOptions(), stages.Aggregate(s, cfg.StageOptions(), cfg.Points, cfg.Pipeline, summaries))
	launch.Publish(s, cfg, append(written, verdict)...)
}
