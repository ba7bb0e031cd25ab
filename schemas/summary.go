package schemas

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
	Pairs         int     `json:"pairs"`
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
type Verdict struct {
	Holds  bool   `json:"holds"`
	Reason string `json:"reason"`
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
type VerdictFile struct {
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
