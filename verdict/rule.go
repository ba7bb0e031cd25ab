// Package verdict is the Beam-free statistics of a run: per-method distributions of
// the exact KLs, the paired comparisons, the partial aggregates a distributed run
// combines (PointAcc) and the verdict with its checks and bootstrap CIs. It knows
// nothing of task kinds beyond the Rule each kind's points are judged by.
package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/schemas"
)

// Rule is the claim a point's verdict tests; a task kind names the rule of its points.
type Rule int

const (
	// Tables: exact JEM's error split (its optimisation gap, q(x)'s gap and the model
	// family's approximation error, each a share of the statistical error of the same
	// tables), with the sampler methods checked against exact jem beside it.
	Tables Rule = iota
	// Samplers: each sampler method against exact jem on the same tasks (where the
	// exact references are trained models with a measured remaining gap, as on 2-D
	// tasks, and the claim under test is the sampler's).
	Samplers
	// NoReference: no exact JEM exists at the kind's scale (image-like tasks: the
	// learned model's Z is intractable). The point reports each method's Z-free
	// measures against the truth (the conditional KL to the Bayes classifier, accuracy
	// against Bayes, ECE, OOD against the true density) and bounds on its joint KL, and
	// takes no verdict: there is no yardstick to grade a recipe against.
	NoReference
)

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

// FamilyOf is the model family a point trains (see prob.Family): scalar x with the
// linear model is the scalar linear family; one-hot x and MLPs are complete. An MLP
// is complete when its last hidden layer has at least X−1 units (it then interpolates
// any X×K logit table); a narrower one is taken as complete too, and familyNote says
// so in the verdict.
func FamilyOf(p schemas.Grid) prob.Family {
	return prob.Family{X: p.XValues, K: p.Classes, ScalarLinear: p.Encoding == "scalar" && p.Model == "linear"}
}

// familyNote warns when FamilyOf's completeness is an assumption rather than a fact:
// an MLP whose last hidden layer is narrower than X−1.
func familyNote(p schemas.Grid) string {
	rest, ok := strings.CutPrefix(p.Model, "mlp:")
	if !ok {
		return ""
	}
	var last int
	if _, err := fmt.Sscan(rest[strings.LastIndex(rest, ",")+1:], &last); err != nil || last >= p.XValues-1 {
		return ""
	}
	return fmt.Sprintf("model %q has a last hidden layer of %d units, fewer than X−1 = %d: the split takes its family as complete, "+
		"so its approximation error (0) may be understated and any shortfall counts as optimisation gap", p.Model, last, p.XValues-1)
}

// bootstrapReps is the number of bootstrap resamples for the CI of the mean difference.
const bootstrapReps = 2000

// MaxDivergedShare is the largest share of a point's baseline/jem pairs (tables) that
// may be left out of the verdict because the baseline or the jem run diverged: above
// it the point is undecided (the converged pairs alone are no longer a fair sample of
// the tables), and the regression check exits 2.
const MaxDivergedShare = 0.10

// leftOut says whether a row is out of the statistics of its method (diverged or
// nonfinite; the verdict counts the nonfinite ones against the method).
func leftOut(r *schemas.ResultRow) bool { return r.Diverged || r.Nonfinite }

// finite reports whether every value is finite.
func finite(xs []float64) bool {
	for _, v := range xs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
