package stages

// Point is one grid point of an experiment: everything that decides how its tables are
// drawn, sampled and trained. The control pipeline has exactly one point; a sweep has
// the Cartesian product of its spec's axes. Points are the stages' configuration (DoFns
// hold them in exported fields); elements carry only a point id.
type Point struct {
	ID        int64    `json:"point_id"`
	XValues   int      `json:"x_values"`      // |X|: x takes values 0..XValues-1
	Classes   int      `json:"classes"`       // K: y takes values 0..Classes-1
	Encoding  string   `json:"encoding"`      // "scalar" or "onehot"
	Generator string   `json:"generator"`     // "uniform" or "dirichlet:ALPHA"
	Samples   int      `json:"samples"`       // N draws per table
	Model     string   `json:"model"`         // "linear" or "mlp:H1,H2,..."
	LR        float64  `json:"lr"`            // Adam learning rate
	Steps     int      `json:"steps"`         // optimiser steps
	BatchSize int      `json:"batch_size"`    // 0 = full batch (cell counts)
	Replicate int      `json:"replicate"`     // replicate index, part of every seed
	Tables    int      `json:"tables"`        // tables drawn at this point
	Methods   []string `json:"methods"`       // subset of baseline, jem, oracle
	PxWeight  float64  `json:"jem_px_weight"` // weight of log p(x) in the jem and oracle losses
}
