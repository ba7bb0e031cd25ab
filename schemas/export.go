package schemas

// ExportFormat names the layout of an export (pipelines/export) in export.json.
const ExportFormat = "jemcheck-export/1"

// Export is export.json: what an export holds, for a user's own training code and for
// pipelines/evaluate. Every file is named relative to the export's folder; with --csv
// each Parquet file has a .csv sibling of the same columns.
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
	IDColumn      string      `json:"id_column"`
	SupportColumn string      `json:"support_column"`
	Support       int         `json:"support"`
	Columns       []string    `json:"columns,omitempty"` // the support file's coordinate columns
	About         string      `json:"about"`
	Grid          int         `json:"grid,omitempty"` // 2-D tasks: G cells a side over [−box, box]²
	Box           float64     `json:"box,omitempty"`
	Model         string      `json:"model"` // jemcheck's model of the point (its own runs' network)
	Files         ExportFiles `json:"files"`
}

// ExportFiles are a point's files.
type ExportFiles struct {
	Samples []string `json:"samples"` // the training draws, one file per block of tasks
	Points  string   `json:"points"`  // the support
	Truth   string   `json:"truth"`   // the true joint on the support
}
