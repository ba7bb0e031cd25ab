package schemas

// ExportFormat names the layout of an export (pipelines/export) in export.json. Fields
// are only ever added within a format: a reader of an older export.json of the same
// format finds every field it knew.
const ExportFormat = "jemcheck-export/1"

// Export is export.json: what an export holds, for a user's own training code and for
// pipelines/evaluate. Every file is named relative to the export's folder; with --csv
// each Parquet file has a .csv sibling of the same columns, named in Files.
type Export struct {
	Format string        `json:"format"`
	Config string        `json:"config"` // config.json: the run's full configuration (seed, task, model, steps…)
	Points []ExportPoint `json:"points"`
}

// ExportPoint is one grid point of an export: its tasks and where their files are.
type ExportPoint struct {
	PointID   int64   `json:"point_id"`
	Kind      string  `json:"kind"`
	Task      string  `json:"task"`
	Classes   int     `json:"classes"`
	Dimension int     `json:"dimension"` // D of x; 0 for tables (x is a value of a set)
	Samples   int     `json:"samples"`   // training draws per task
	Tasks     int     `json:"tasks"`
	IDs       []int64 `json:"ids"` // the tasks' ids, in order
	// The support: every task is evaluated on Support points, numbered in
	// SupportColumn; a logits file names the task by IDColumn.
	IDColumn      string   `json:"id_column"`
	SupportColumn string   `json:"support_column"`
	Support       int      `json:"support"`
	Columns       []string `json:"columns,omitempty"` // the support file's coordinate columns
	About         string   `json:"about"`
	Grid          int      `json:"grid,omitempty"` // 2-D tasks: G cells a side over [−box, box]²
	Box           float64  `json:"box,omitempty"`  // continuous tasks: the half-width b of Bounds
	// Bounds are the box of a continuous task, [−b, b] on each of its Dimension axes
	// (absent for tables and binary tables).
	Bounds [][2]float64 `json:"bounds,omitempty"`
	// LabelColumn is the class column of the draws and of the truth (0..Classes−1).
	LabelColumn string       `json:"label_column"`
	Logits      ExportLogits `json:"logits"` // the logits file evaluate takes for the point
	Model       string       `json:"model"`  // jemcheck's model of the point (its own runs' network)
	// Split is the protocol's held-out split of every task's draws, marked in the
	// samples (Split.Column): jemcheck's methods, exact JEM included, train on the
	// draws marked 0 only, and so must a model evaluated against them.
	Split ExportSplit `json:"split"`
	// ONNX, on kinds whose models are judged as ONNX classifiers (images), says how
	// (pipelines/evaluate --onnx); Logits is then unused.
	ONNX  *ExportONNX `json:"onnx,omitempty"`
	Files ExportFiles `json:"files"`
}

// HeldoutColumn is the held-out marker's column in the samples (1: held out of
// training, 0: trained on) and its array in an .npz export.
const HeldoutColumn = "heldout"

// ExportSplit is the held-out split of a point's draws (tasks/protocol.go): of a
// task's Samples draws, in draw order, the first Train are trained on (Column 0) and
// the last HeldOut held out (Column 1), the same for every task and every method.
type ExportSplit struct {
	Column  string  `json:"column"`  // the marker's column in the samples (and array in .npz files)
	Holdout float64 `json:"holdout"` // the share held out: HeldOut = ⌈Samples·Holdout⌉ (0: none)
	Train   int     `json:"train"`   // draws per task trained on
	HeldOut int     `json:"heldout"` // draws per task held out
	About   string  `json:"about"`   // the rule in one sentence
}

// ExportONNX says how a point's tasks take a user's ONNX classifier.
type ExportONNX struct {
	Input       string `json:"input"`       // the input's shape, e.g. "[n, 1, 8, 8] float32"
	Output      string `json:"output"`      // "[n, K] float32: the logits f(x)[y]"
	Placeholder string `json:"placeholder"` // the task id's placeholder in --onnx ("{task}")
	Evaluate    string `json:"evaluate"`    // the evaluate command line, with one model per task
}

// ExportLogits describes the logits file of a point (pipelines/evaluate --logits).
type ExportLogits struct {
	// Columns every file has, in order: IDColumn, SupportColumn, ClassColumn, LogitColumn.
	Columns     []string `json:"columns"`
	ClassColumn string   `json:"class_column"`
	LogitColumn string   `json:"logit_column"`
	// ModelColumn, optional, names each row's model (several models in one file are
	// evaluated side by side).
	ModelColumn string `json:"model_column"`
}

// ExportFiles are a point's files and their columns.
type ExportFiles struct {
	Samples []string `json:"samples"` // the training draws, one file per block of tasks
	Points  string   `json:"points"`  // the support
	Truth   string   `json:"truth"`   // the true joint on the support
	// The files' columns, as in the files.
	SamplesColumns []string `json:"samples_columns,omitempty"`
	PointsColumns  []string `json:"points_columns,omitempty"`
	TruthColumns   []string `json:"truth_columns,omitempty"`
	// Arrays, on kinds exported as numpy arrays (images), are one .npz file per task
	// (in the order of IDs), each holding the arrays named in ArraysAbout (name: shape,
	// dtype and meaning); Truth is then the folder of the truths' JSON parameters.
	Arrays      []string          `json:"arrays,omitempty"`
	ArraysAbout map[string]string `json:"arrays_about,omitempty"`
	// With --csv, the CSV siblings of Samples, Points and Truth.
	SamplesCSV []string `json:"samples_csv,omitempty"`
	PointsCSV  string   `json:"points_csv,omitempty"`
	TruthCSV   string   `json:"truth_csv,omitempty"`
}

// ExportLogitsOf is the logits file of a point whose logits name the task by idColumn
// and the point of its support by supportColumn.
func ExportLogitsOf(idColumn, supportColumn string) ExportLogits {
	return ExportLogits{Columns: LogitColumns{IDColumn: idColumn, CellColumn: supportColumn}.Required(),
		ClassColumn: LogitClassColumn, LogitColumn: LogitValueColumn, ModelColumn: LogitModelColumn}
}

// BoxBounds are the bounds [−box, box] on each of d axes (nil without a box).
func BoxBounds(box float64, d int) [][2]float64 {
	if box <= 0 || d <= 0 {
		return nil
	}
	out := make([][2]float64, d)
	for i := range out {
		out[i] = [2]float64{-box, box}
	}
	return out
}
