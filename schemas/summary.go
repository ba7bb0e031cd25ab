package schemas

import (
	"encoding/json"
	"math"
)

// Dist summarises one metric over the non-diverged runs of a group.
type Dist struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P10    float64 `json:"p10"`
	P90    float64 `json:"p90"`
}

// MethodSummary aggregates the runs of one method at one grid point.
type MethodSummary struct {
	Method        string  `json:"method"`
	Runs          int     `json:"runs"`
	Diverged      int     `json:"diverged"`
	KLJoint       Dist    `json:"kl_joint"`
	KLMarginal    Dist    `json:"kl_marginal"`
	KLConditional Dist    `json:"kl_conditional"`
	Accuracy      Dist    `json:"accuracy"`
	BayesAccuracy Dist    `json:"bayes_accuracy"`
	KLEmpirical   Dist    `json:"kl_empirical"`
	FloorRatio    float64 `json:"floor_ratio"` // mean joint KL / floor
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

// PointSummary aggregates one grid point (the whole run in the control pipeline).
type PointSummary struct {
	PointID    int64           `json:"point_id"`
	Params     PointParams     `json:"params"` // the grid point's values
	Tables     int             `json:"tables"`
	Floor      float64         `json:"floor"`
	Methods    []MethodSummary `json:"methods"`
	Comparison *Comparison     `json:"comparison,omitempty"` // present when baseline and jem both ran
	Verdict    Verdict         `json:"verdict"`
}

// Verdict says whether the JEM claim holds: JEM's joint KL near the floor, the baseline's not.
//
// Decided is false when no decision was taken (undecided: a method is missing, every
// pair diverged, or more than stages.MaxDivergedShare of the pairs diverged); Holds is
// then false and the reason starts with "undecided". Pairs are the baseline/jem pairs
// of tables the decision rests on, Excluded those left out as diverged (summed over the
// points for a sweep's overall verdict, which is decided when every point is).
type Verdict struct {
	Holds    bool   `json:"holds"`
	Decided  bool   `json:"decided"`
	Pairs    int    `json:"pairs"`
	Excluded int    `json:"excluded_pairs"`
	Reason   string `json:"reason"`
}

// Summary is summary.json.
type Summary struct {
	Pipeline string         `json:"pipeline"`
	Seed     uint64         `json:"seed"`
	Points   []PointSummary `json:"points"`
	Verdict  Verdict        `json:"verdict"` // over all points
}

// PointParams are the values of one grid point.
type PointParams struct {
	XValues   int64   `json:"x_values"`
	Classes   int64   `json:"classes"`
	Encoding  string  `json:"encoding"`
	Generator string  `json:"generator"`
	Samples   int64   `json:"samples"`
	Model     string  `json:"model"`
	LR        float64 `json:"lr"`
	Steps     int64   `json:"steps"`
	BatchSize int64   `json:"batch_size"`
	Replicate int64   `json:"replicate"`
	PxWeight  float64 `json:"jem_px_weight"`
}

// VerdictFile is verdict.json, written by the regression check next to summary.json:
// the decision, the numbers it rests on and the thresholds it was taken under.
//
// A number that does not exist (a mean over no converged run, the comparison of no
// pair) is NaN here and null in the JSON, never a made-up 0: JEMMeanKL, BaseMeanKL,
// FloorRatio, BaselineToJEM and WilcoxonP.
type VerdictFile struct {
	Holds         bool    `json:"holds"`
	Decided       bool    `json:"decided"`
	Reason        string  `json:"reason"`
	Tables        int     `json:"tables"`
	Pairs         int     `json:"pairs"`          // tables the decision rests on
	Excluded      int     `json:"excluded_pairs"` // tables left out as diverged
	Floor         float64 `json:"floor"`
	JEMMeanKL     Number  `json:"jem_mean_kl_joint"`
	BaseMeanKL    Number  `json:"baseline_mean_kl_joint"`
	FloorRatio    Number  `json:"jem_floor_ratio"`
	BaselineToJEM Number  `json:"baseline_to_jem"`
	WilcoxonP     Number  `json:"wilcoxon_p"`
	FloorFactor   float64 `json:"floor_factor"`
	MinRatio      float64 `json:"min_ratio"`
	MaxP          float64 `json:"max_p"`
	PxWeight      float64 `json:"jem_px_weight"`
	Seed          uint64  `json:"seed"`
}

// Number is a float64 that may not exist: NaN in Go, null in JSON (never a made-up 0).
type Number float64

// MarshalJSON writes NaN as null.
func (n Number) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) {
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
