package schemas

import (
	"bytes"
	"encoding/json"
	"math"
)

// Dist summarises one metric over the non-diverged runs of a group: its finite values
// (Count of them) and, separately, how many were infinite (the KL of an empirical table
// with an empty cell is +Inf; a mean that silently dropped them would be a conditional
// mean).
type Dist struct {
	Count    int     `json:"count"`
	Infinite int     `json:"infinite"` // +Inf values left out of the statistics
	Mean     float64 `json:"mean"`
	Median   float64 `json:"median"`
	P10      float64 `json:"p10"`
	P90      float64 `json:"p90"`
}

// MethodSummary aggregates the runs of one method at one grid point.
type MethodSummary struct {
	Method        string  `json:"method"`
	Runs          int     `json:"runs"`
	Diverged      int     `json:"diverged"`  // runs the trainer flagged (a divergence guard fired): left out of the statistics
	Nonfinite     int     `json:"nonfinite"` // runs whose KL is not finite though no guard fired: their infinite values count in the Dists' infinite
	KLJoint       Dist    `json:"kl_joint"`
	KLMarginal    Dist    `json:"kl_marginal"`
	KLConditional Dist    `json:"kl_conditional"`
	Accuracy      Dist    `json:"accuracy"`
	BayesAccuracy Dist    `json:"bayes_accuracy"`
	KLEmpirical   Dist    `json:"kl_empirical"`
	FloorRatio    float64 `json:"floor_ratio"` // mean joint KL / floor (the first-order (X·K−1)/(2N))

	// The error split of the joint KL (see schemas.ResultRow), and each part's mean
	// divided by the mean statistical scale (kl_reference_expected − kl_approximation)
	// of the same tables.
	KLApproximation   Dist    `json:"kl_approximation"`
	KLOptimisationGap Dist    `json:"kl_optimisation_gap"`
	KLEstimation      Dist    `json:"kl_estimation"`
	KLMarginalGap     Dist    `json:"kl_marginal_gap"`
	ReferenceRatio    float64 `json:"reference_ratio"` // mean kl_joint / mean kl_reference_expected
	GapRatio          float64 `json:"gap_ratio"`       // mean kl_optimisation_gap / mean statistical scale

	// The paper's promises beyond the joint, exact on the table (see schemas.ResultRow).
	AUROCPx              Dist `json:"auroc_px"`
	AUROCPy              Dist `json:"auroc_py"`
	AUROCTruePx          Dist `json:"auroc_true_px"`
	CalibrationErrorTrue Dist `json:"calibration_error_true"`

	// Sampler methods: the final replay buffer (see schemas.ResultRow); count 0 for
	// the other methods.
	BufferInBox   Dist `json:"buffer_in_box"`
	BufferTVTruth Dist `json:"buffer_tv_truth"`
	BufferTVModel Dist `json:"buffer_tv_model"`

	// The promises on 2-D tasks (see schemas.ResultRow; ece also for tables).
	AUROCPxGrad      Dist `json:"auroc_pxgrad"`
	ECE              Dist `json:"ece"`
	AccClean         Dist `json:"acc_clean"`
	AccAttacked      Dist `json:"acc_attacked"`
	AccPurified      Dist `json:"acc_purified"`
	AccBayesPurified Dist `json:"acc_bayes_purified"`
	SamplesTVNoise   Dist `json:"samples_tv_noise"`
	SamplesTVBuffer  Dist `json:"samples_tv_buffer"`

	// Training wall time per run in ms (--timings; 0 otherwise).
	TrainMS Dist `json:"train_ms"`
	// pcd, pcd-exact: the joint KL at the parameters averaged over the last 10% of steps.
	KLJointAveraged Dist `json:"kl_joint_averaged"`
	// 2-D exact references: the joint KL their last two thirds of steps gained (ref_gap).
	RefGap Dist `json:"ref_gap"`
	// The temperature diagnostic (see schemas.ResultRow): β* and the joint KL at β*.
	BestTemperature        Dist `json:"best_temperature"`
	KLJointBestTemperature Dist `json:"kl_joint_best_temperature"`

	// The protocol (see Summary.Protocol and schemas.ResultRow): Unstable counts the runs
	// flagged unstable (their held-out NLL collapsed from its best, or ended above the
	// baseline's). They are never dropped: they stay in every mean and distribution
	// above, and are counted here. The distributions of each run's selected step, its
	// gradient evaluations (all steps, and up to the selected step), its CPU seconds and
	// its held-out NLL (at the selected and the last step) are over the runs that
	// recorded them (a value ≤ 0 or NaN is "not recorded"); absent from the JSON when
	// no run did (a table task, or a summary written before they existed).
	Unstable          int  `json:"unstable"`
	SelectedStep      Dist `json:"selected_step,omitzero"`
	GradEvals         Dist `json:"grad_evals,omitzero"`
	GradEvalsSelected Dist `json:"grad_evals_selected,omitzero"`
	CPUSeconds        Dist `json:"cpu_seconds,omitzero"`
	HeldoutNLL        Dist `json:"heldout_nll,omitzero"`
	HeldoutNLLFinal   Dist `json:"heldout_nll_final,omitzero"`

	// Tasks without exact JEM (image kinds; see schemas.ResultRow), over the runs whose
	// task's AIS calibration on the truth was run: the joint KL's forward-AIS lower
	// bound (the accepted tasks), q(x)'s part's lower bound kl_joint_lower −
	// kl_conditional on the same tasks, the forward AIS's ESS, and ais_accepted as 1 or
	// 0 (its count the runs with a calibration, its mean the share accepted). Absent
	// from the JSON elsewhere.
	KLJointLower    Dist `json:"kl_joint_lower,omitzero"`
	KLMarginalLower Dist `json:"kl_marginal_lower,omitzero"`
	AISESS          Dist `json:"ais_ess,omitzero"`
	AISAccepted     Dist `json:"ais_accepted,omitzero"`

	// The Z-free divergences (see schemas.ResultRow: 2-D tasks, and the log-ratio
	// spread on block tasks), over the runs that have them; absent elsewhere.
	FisherDiv     Dist `json:"fisher_div,omitzero"`
	FisherDivCond Dist `json:"fisher_div_cond,omitzero"`
	LogRatioSD    Dist `json:"log_ratio_sd,omitzero"`
}

// Comparison is the paired JEM-vs-baseline comparison of joint KL over the tables
// where both runs converged.
type Comparison struct {
	Pairs         int     `json:"pairs"`           // tables compared: both runs converged
	Excluded      int     `json:"excluded_pairs"`  // tables left out: the baseline or the jem run diverged (or is missing)
	JEMWinShare   float64 `json:"jem_win_share"`   // share of tables with KL_jem < KL_baseline
	MeanDiff      float64 `json:"mean_diff"`       // mean of KL_baseline - KL_jem
	DiffCILow     float64 `json:"diff_ci_low"`     // bootstrap 95% CI of MeanDiff
	DiffCIHigh    float64 `json:"diff_ci_high"`    //
	WilcoxonW     float64 `json:"wilcoxon_w"`      // signed-rank statistic W+ (sum of ranks of positive diffs)
	WilcoxonZ     float64 `json:"wilcoxon_z"`      // normal approximation
	WilcoxonP     float64 `json:"wilcoxon_p"`      // two-sided p-value
	BaselineToJEM float64 `json:"baseline_to_jem"` // mean KL_baseline / mean KL_jem
}

// SamplerComparison pairs a sampler method's runs with exact jem's on the same tasks
// (both converged): the sampler's excess joint KL over exact JEM, per task, with its
// 95% CI and a Wilcoxon signed-rank test, and the same for q(x) alone.
type SamplerComparison struct {
	Method string `json:"method"`
	// Rank is the recipe's rank by mean excess among the point's recipes, 1 = best
	// (verdict.Rank); 0 for a reference.
	Rank int `json:"rank"`
	// InBestSet: the recipe is not distinguishable from the point's best (least mean
	// excess): its paired two-sided Wilcoxon test against the best, Holm-corrected over
	// the comparisons with the best, has p ≥ 0.05 (BestPHolm); the best is in the set.
	// OverBest is its mean paired excess over the best's [95% paired-bootstrap CI], MDE
	// the smallest difference from the best the point's tasks can detect (80% power),
	// AvgRank its Friedman average rank on the tasks every recipe has; the point's
	// FriedmanP over FriedmanTasks tasks and its Nemenyi CriticalDifference of average
	// ranks (α = 0.05) are repeated on each of its recipes. Null where not computed, and
	// MDE null also where no difference is detectable at the point's tasks (the exact
	// signed-rank test's smallest p exceeds α over the comparisons: verdict.Detectable).
	InBestSet          bool   `json:"indistinguishable_from_best"`
	OverBest           Number `json:"over_best"`
	OverBestLo         Number `json:"over_best_ci_low"`
	OverBestHi         Number `json:"over_best_ci_high"`
	BestPHolm          Number `json:"p_vs_best_holm"`
	MDE                Number `json:"mde"`
	AvgRank            Number `json:"avg_rank"`
	FriedmanP          Number `json:"friedman_p"`
	FriedmanTasks      int    `json:"friedman_tasks"`
	CriticalDifference Number `json:"critical_difference"`
	Pairs              int    `json:"pairs"`
	Excluded           int    `json:"excluded_pairs"` // tasks left out: a run diverged (or is missing), or exact jem's KL is not finite
	// Nonfinite are the tasks where the sampler's KL is not finite (no guard fired) and
	// exact jem's is: its excess there is +Inf, so they count against the sampler (the
	// excess statistics are over the Pairs with finite KLs).
	Nonfinite      int     `json:"nonfinite"`
	MeanExact      float64 `json:"mean_kl_joint_exact"`
	MeanSampler    float64 `json:"mean_kl_joint_sampler"`
	Excess         float64 `json:"excess"` // mean KL_sampler − KL_jem (nats)
	ExcessCILow    float64 `json:"excess_ci_low"`
	ExcessCIHigh   float64 `json:"excess_ci_high"`
	MarginalExcess float64 `json:"marginal_excess"` // the same for KL(p(x)‖q(x))
	MarginalCILow  float64 `json:"marginal_excess_ci_low"`
	MarginalCIHigh float64 `json:"marginal_excess_ci_high"`
	WorseShare     float64 `json:"worse_share"` // share of tasks where the sampler's KL is higher
	WilcoxonP      float64 `json:"wilcoxon_p"`
	ExcessRatio    float64 `json:"excess_ratio"` // Excess / MeanExact (data only: the verdict and the report speak in nats)

	// The verdict's grade of the excess (verdict.Grade*: matches, within_0.1_nat,
	// within_1_nat, worse, infinite, none), judged at the upper end of its 95% CI;
	// MatchesWithin is the upper end of the "matches" band at this point in nats (the
	// reference's own statistical error times the margin, or verdict.BandClose where
	// the CI covers 0).
	Grade         string  `json:"grade,omitempty"`
	MatchesWithin float64 `json:"matches_within"`
	// Runs and Unstable are the method's runs at the point and those flagged unstable
	// (in the pairs like any other run: counted, never dropped).
	Runs     int `json:"runs"`
	Unstable int `json:"unstable"`
	// Reference: an exact reference shown beside the recipes with its own excess
	// (jem-converged: exact JEM on full batches), graded but never judged: it does not
	// decide the verdict, and exact jem stays the yardstick.
	Reference bool `json:"reference,omitempty"`

	// The converged yardstick (jem-converged, trained until the protocol's convergence
	// rule holds, up to a cap): OverConverged is the recipe's mean excess joint KL over
	// it on the ConvergedPairs tasks both ran [95% bootstrap CI], NaN where jem-converged
	// did not run or on its own entry. BelowConverged: the CI's upper end is below 0,
	// the recipe "below the converged yardstick" — flagged as suspect (a yardstick that
	// is not converged, or chance), never counted as a win. On jem-converged's own entry,
	// JemOverConverged is exact jem's (the shared-budget yardstick's) mean excess over
	// it [95% CI]: how far the verdict's yardstick is from converged; NaN elsewhere.
	OverConverged      Number `json:"excess_over_converged"`
	OverConvergedLo    Number `json:"excess_over_converged_ci_low"`
	OverConvergedHi    Number `json:"excess_over_converged_ci_high"`
	ConvergedPairs     int    `json:"converged_pairs"`
	BelowConverged     bool   `json:"below_converged,omitempty"`
	JemOverConverged   Number `json:"jem_excess_over_converged"`
	JemOverConvergedLo Number `json:"jem_excess_over_converged_ci_low"`
	JemOverConvergedHi Number `json:"jem_excess_over_converged_ci_high"`
}

// PointSummary aggregates one grid point (the whole run in the control pipeline).
type PointSummary struct {
	PointID int64   `json:"point_id"`
	Params  Grid    `json:"params"` // the grid point's values
	Tables  int     `json:"tables"`
	Floor   float64 `json:"floor"`        // the first-order (X·K−1)/(2N), for comparison
	Family  string  `json:"model_family"` // "complete" or the restricted family the point trains

	// The dimension ladder (the report's): the dimension D of the point's x and its task
	// with D taken out, from its task kind (tasks.Kind's Dimension and Family); 0 and ""
	// for a kind with no dimension (tables).
	Dimension    int    `json:"dimension"`
	LadderFamily string `json:"ladder_family"`

	// References over the point's tables (every method shares them).
	EmptyCellShare    float64 `json:"empty_cell_share"`      // share of tables whose N draws left a cell empty
	ReferenceExpected float64 `json:"kl_reference_expected"` // mean exact E[KL(p‖add-½ fit)] over N-draw datasets
	Reference         float64 `json:"kl_reference"`          // mean KL(p‖add-½ fit) on the drawn counts

	Methods    []MethodSummary `json:"methods"`
	Comparison *Comparison     `json:"comparison,omitempty"` // present when baseline and jem both ran
	// Samplers is each sampler method (sgld, pcd, pcd-exact) paired with exact jem on
	// the same tasks, present when both ran.
	Samplers []SamplerComparison `json:"samplers,omitempty"`
	Verdict  Verdict             `json:"verdict"`
}

// Check is one line of the verdict: a ratio of sums over the tables with its
// table-bootstrap 95% CI, passing when the CI's upper end is at most Limit. Deciding
// checks decide the verdict; the others are reported beside it.
type Check struct {
	Name     string `json:"name"`
	What     string `json:"what"`
	Value    Number `json:"value"`
	CILow    Number `json:"ci_low"`
	CIHigh   Number `json:"ci_high"`
	Limit    Number `json:"limit"`
	Pass     bool   `json:"pass"`
	Deciding bool   `json:"deciding"`
}

// Verdict says whether the JEM claim holds at a point: JEM's logits fit the joint as well
// as its N draws allow, i.e. the parts of its error JEM is responsible for (its
// optimisation gap, of the joint and of q(x)) and the model family's approximation error
// are each within the margin of the statistical error. Checks holds the lines; Cause
// names what failed (steps, minibatch noise, px weight, model family, too few tables).
//
// Decided is false when no decision was taken (undecided: a method is missing, every
// pair diverged, more than stages.MaxDivergedShare of the pairs diverged, fewer than
// stages.MinTables tables, or a point with nothing for q(x) to learn); Holds is
// then false and the reason starts with "undecided". Pairs are the baseline/jem pairs
// of tables the decision rests on, Excluded those left out as diverged (summed over the
// points for a sweep's overall verdict, which is decided when every point is).
//
// Headline is the verdict in one sentence, in nats: whether exact JEM itself holds
// (and how far it is from the truth beside the baseline), then each recipe's grade,
// naming those that fail. Exact is exact JEM's own outcome: holds, fails, undecided, or
// "" where the point does not judge it (a 2-D point without a baseline). Level grades
// the whole: holds (exact JEM holds or is not judged, and every recipe matches it),
// short (no failure, but a recipe only within 0.1 or 1 nat), fails (exact JEM fails,
// or a recipe is worse than 1 nat or infinite), undecided.
type Verdict struct {
	Holds    bool    `json:"holds"`
	Decided  bool    `json:"decided"`
	Pairs    int     `json:"pairs"`
	Excluded int     `json:"excluded_pairs"`
	Reason   string  `json:"reason"`
	Cause    string  `json:"cause,omitempty"` // when it fails: steps, minibatch, px_weight, model_family, tables, sampler, nonfinite, exact_jem
	Checks   []Check `json:"checks,omitempty"`
	Headline string  `json:"headline,omitempty"`
	Exact    string  `json:"exact,omitempty"`
	Level    string  `json:"level,omitempty"`
}

// Protocol is the training protocol a run declares (tasks.Protocol, copied: every
// method of a point trained alike and scored at an iterate chosen without the truth).
type Protocol struct {
	Select       string  `json:"select"`        // heldout or last
	Holdout      float64 `json:"holdout"`       // share of the draws held out from training
	Checks       string  `json:"checks"`        // the cadence of the held-out NLL and the curves
	UnstableNats float64 `json:"unstable_nats"` // the collapse flag's threshold
	Same         string  `json:"same"`          // what every method shares
	Exception    string  `json:"exception"`     // the one method trained otherwise
}

// Summary is summary.json.
type Summary struct {
	Pipeline string         `json:"pipeline"`
	Seed     uint64         `json:"seed"`
	Protocol *Protocol      `json:"protocol,omitempty"` // absent where no kind of the run selects iterates (tables)
	Points   []PointSummary `json:"points"`
	Verdict  Verdict        `json:"verdict"` // over all points
}

// VerdictFile is verdict.json, written by the regression check next to summary.json:
// the decision, the checks it rests on and the margin it was taken under.
//
// A number that does not exist (a mean over no converged run, the comparison of no
// pair) is NaN here and null in the JSON, never a made-up 0.
type VerdictFile struct {
	Holds             bool    `json:"holds"`
	Decided           bool    `json:"decided"`
	Reason            string  `json:"reason"`
	Cause             string  `json:"cause,omitempty"`
	Checks            []Check `json:"checks"`
	Margin            float64 `json:"margin"`
	Tables            int     `json:"tables"`
	Pairs             int     `json:"pairs"`          // tables the decision rests on
	Excluded          int     `json:"excluded_pairs"` // tables left out as diverged
	EmptyCellShare    float64 `json:"empty_cell_share"`
	ReferenceExpected Number  `json:"kl_reference_expected"`
	Floor             Number  `json:"floor"`
	JEMMeanKL         Number  `json:"jem_mean_kl_joint"`
	JEMMeanGap        Number  `json:"jem_mean_kl_optimisation_gap"`
	BaseMeanKL        Number  `json:"baseline_mean_kl_joint"`
	BaselineToJEM     Number  `json:"baseline_to_jem"`
	WilcoxonP         Number  `json:"wilcoxon_p"`
	MaxP              float64 `json:"max_p"`
	// Sampler methods (sgld, pcd, pcd-exact) paired with exact jem, and the gate on
	// their excess in nats (0: none).
	Samplers         []SamplerComparison `json:"samplers,omitempty"`
	MaxSamplerExcess float64             `json:"max_sampler_excess,omitempty"`
	Task             string              `json:"task"`
	PxWeight         float64             `json:"jem_px_weight"`
	Seed             uint64              `json:"seed"`
}

// A verdict not taken (decided false) neither holds nor fails: summary.json and
// verdict.json write its "holds" as null, never false (a reader filtering on
// holds == false would count it as a failure). Holds stays the first field of both
// structs; null reads back as false with decided false.

type verdictJSON Verdict

// MarshalJSON writes holds as null when the verdict is not decided.
func (v Verdict) MarshalJSON() ([]byte, error) {
	if !v.Decided {
		v.Holds = false
	}
	b, err := json.Marshal(verdictJSON(v))
	if err != nil || v.Decided {
		return b, err
	}
	return nullHolds(b), nil
}

type verdictFileJSON VerdictFile

// MarshalJSON writes holds as null when the verdict is not decided.
func (v VerdictFile) MarshalJSON() ([]byte, error) {
	if !v.Decided {
		v.Holds = false
	}
	b, err := json.Marshal(verdictFileJSON(v))
	if err != nil || v.Decided {
		return b, err
	}
	return nullHolds(b), nil
}

// nullHolds replaces the leading "holds":false of an undecided verdict's JSON by null.
func nullHolds(b []byte) []byte {
	return bytes.Replace(b, []byte(`{"holds":false,`), []byte(`{"holds":null,`), 1)
}

// Number is a float64 that may not exist: NaN in Go, null in JSON (never a made-up 0).
type Number float64

// MarshalJSON writes NaN (and an infinity, which JSON has no number for) as null.
func (n Number) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// UnmarshalJSON reads null as NaN.
func (n *Number) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*n = Number(math.NaN())
		return nil
	}
	return json.Unmarshal(data, (*float64)(n))
}

// The summaries' numbers that may not exist (a 2-D point has no floor or exact
// reference; a ratio over no run) are NaN in Go and null in the JSON, like Number:
// these marshal the float64 fields that can be NaN as Numbers, and read null back as NaN.

type pointSummaryJSON PointSummary

// MarshalJSON writes NaN fields as null.
func (p PointSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		pointSummaryJSON
		Floor             Number `json:"floor"`
		ReferenceExpected Number `json:"kl_reference_expected"`
		Reference         Number `json:"kl_reference"`
		EmptyCellShare    Number `json:"empty_cell_share"`
	}{pointSummaryJSON(p), Number(p.Floor), Number(p.ReferenceExpected), Number(p.Reference), Number(p.EmptyCellShare)})
}

// UnmarshalJSON reads null fields as NaN.
func (p *PointSummary) UnmarshalJSON(data []byte) error {
	v := struct {
		*pointSummaryJSON
		Floor             Number `json:"floor"`
		ReferenceExpected Number `json:"kl_reference_expected"`
		Reference         Number `json:"kl_reference"`
		EmptyCellShare    Number `json:"empty_cell_share"`
	}{pointSummaryJSON: (*pointSummaryJSON)(p)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	p.Floor, p.ReferenceExpected, p.Reference, p.EmptyCellShare = float64(v.Floor), float64(v.ReferenceExpected), float64(v.Reference), float64(v.EmptyCellShare)
	return nil
}

type methodSummaryJSON MethodSummary

// MarshalJSON writes NaN fields as null.
func (m MethodSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		methodSummaryJSON
		FloorRatio     Number `json:"floor_ratio"`
		ReferenceRatio Number `json:"reference_ratio"`
		GapRatio       Number `json:"gap_ratio"`
	}{methodSummaryJSON(m), Number(m.FloorRatio), Number(m.ReferenceRatio), Number(m.GapRatio)})
}

// UnmarshalJSON reads null fields as NaN.
func (m *MethodSummary) UnmarshalJSON(data []byte) error {
	v := struct {
		*methodSummaryJSON
		FloorRatio     Number `json:"floor_ratio"`
		ReferenceRatio Number `json:"reference_ratio"`
		GapRatio       Number `json:"gap_ratio"`
	}{methodSummaryJSON: (*methodSummaryJSON)(m)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	m.FloorRatio, m.ReferenceRatio, m.GapRatio = float64(v.FloorRatio), float64(v.ReferenceRatio), float64(v.GapRatio)
	return nil
}

type samplerComparisonJSON SamplerComparison

// MarshalJSON writes NaN fields as null.
func (c SamplerComparison) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		samplerComparisonJSON
		MeanExact      Number `json:"mean_kl_joint_exact"`
		MeanSampler    Number `json:"mean_kl_joint_sampler"`
		Excess         Number `json:"excess"`
		ExcessCILow    Number `json:"excess_ci_low"`
		ExcessCIHigh   Number `json:"excess_ci_high"`
		MarginalExcess Number `json:"marginal_excess"`
		MarginalCILow  Number `json:"marginal_excess_ci_low"`
		MarginalCIHigh Number `json:"marginal_excess_ci_high"`
		WorseShare     Number `json:"worse_share"`
		WilcoxonP      Number `json:"wilcoxon_p"`
		ExcessRatio    Number `json:"excess_ratio"`
		MatchesWithin  Number `json:"matches_within"`
	}{samplerComparisonJSON(c), Number(c.MeanExact), Number(c.MeanSampler), Number(c.Excess), Number(c.ExcessCILow),
		Number(c.ExcessCIHigh), Number(c.MarginalExcess), Number(c.MarginalCILow), Number(c.MarginalCIHigh),
		Number(c.WorseShare), Number(c.WilcoxonP), Number(c.ExcessRatio), Number(c.MatchesWithin)})
}

// UnmarshalJSON reads null fields as NaN.
func (c *SamplerComparison) UnmarshalJSON(data []byte) error {
	v := struct {
		*samplerComparisonJSON
		MeanExact      Number `json:"mean_kl_joint_exact"`
		MeanSampler    Number `json:"mean_kl_joint_sampler"`
		Excess         Number `json:"excess"`
		ExcessCILow    Number `json:"excess_ci_low"`
		ExcessCIHigh   Number `json:"excess_ci_high"`
		MarginalExcess Number `json:"marginal_excess"`
		MarginalCILow  Number `json:"marginal_excess_ci_low"`
		MarginalCIHigh Number `json:"marginal_excess_ci_high"`
		WorseShare     Number `json:"worse_share"`
		WilcoxonP      Number `json:"wilcoxon_p"`
		ExcessRatio    Number `json:"excess_ratio"`
		MatchesWithin  Number `json:"matches_within"`
	}{samplerComparisonJSON: (*samplerComparisonJSON)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.MeanExact, c.MeanSampler, c.Excess = float64(v.MeanExact), float64(v.MeanSampler), float64(v.Excess)
	c.ExcessCILow, c.ExcessCIHigh = float64(v.ExcessCILow), float64(v.ExcessCIHigh)
	c.MarginalExcess, c.MarginalCILow, c.MarginalCIHigh = float64(v.MarginalExcess), float64(v.MarginalCILow), float64(v.MarginalCIHigh)
	c.WorseShare, c.WilcoxonP, c.ExcessRatio, c.MatchesWithin = float64(v.WorseShare), float64(v.WilcoxonP), float64(v.ExcessRatio), float64(v.MatchesWithin)
	return nil
}

type distJSON Dist

// MarshalJSON writes a statistic that is not finite (a measure no run has) as null.
func (d Dist) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		distJSON
		Mean   Number `json:"mean"`
		Median Number `json:"median"`
		P10    Number `json:"p10"`
		P90    Number `json:"p90"`
	}{distJSON(d), Number(d.Mean), Number(d.Median), Number(d.P10), Number(d.P90)})
}

// UnmarshalJSON reads null statistics as NaN.
func (d *Dist) UnmarshalJSON(data []byte) error {
	v := struct {
		*distJSON
		Mean   Number `json:"mean"`
		Median Number `json:"median"`
		P10    Number `json:"p10"`
		P90    Number `json:"p90"`
	}{distJSON: (*distJSON)(d)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	d.Mean, d.Median, d.P10, d.P90 = float64(v.Mean), float64(v.Median), float64(v.P10), float64(v.P90)
	return nil
}

type comparisonJSON Comparison

// MarshalJSON writes the numbers that are not finite as null (a point whose baseline or
// exact jem has no finite KL).
func (c Comparison) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		comparisonJSON
		JEMWinShare   Number `json:"jem_win_share"`
		MeanDiff      Number `json:"mean_diff"`
		DiffCILow     Number `json:"diff_ci_low"`
		DiffCIHigh    Number `json:"diff_ci_high"`
		WilcoxonW     Number `json:"wilcoxon_w"`
		WilcoxonZ     Number `json:"wilcoxon_z"`
		WilcoxonP     Number `json:"wilcoxon_p"`
		BaselineToJEM Number `json:"baseline_to_jem"`
	}{comparisonJSON(c), Number(c.JEMWinShare), Number(c.MeanDiff), Number(c.DiffCILow), Number(c.DiffCIHigh),
		Number(c.WilcoxonW), Number(c.WilcoxonZ), Number(c.WilcoxonP), Number(c.BaselineToJEM)})
}

// UnmarshalJSON reads null numbers as NaN.
func (c *Comparison) UnmarshalJSON(data []byte) error {
	v := struct {
		*comparisonJSON
		JEMWinShare   Number `json:"jem_win_share"`
		MeanDiff      Number `json:"mean_diff"`
		DiffCILow     Number `json:"diff_ci_low"`
		DiffCIHigh    Number `json:"diff_ci_high"`
		WilcoxonW     Number `json:"wilcoxon_w"`
		WilcoxonZ     Number `json:"wilcoxon_z"`
		WilcoxonP     Number `json:"wilcoxon_p"`
		BaselineToJEM Number `json:"baseline_to_jem"`
	}{comparisonJSON: (*comparisonJSON)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.JEMWinShare, c.MeanDiff, c.DiffCILow, c.DiffCIHigh = float64(v.JEMWinShare), float64(v.MeanDiff), float64(v.DiffCILow), float64(v.DiffCIHigh)
	c.WilcoxonW, c.WilcoxonZ, c.WilcoxonP, c.BaselineToJEM = float64(v.WilcoxonW), float64(v.WilcoxonZ), float64(v.WilcoxonP), float64(v.BaselineToJEM)
	return nil
}
