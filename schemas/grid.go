package schemas

import "math"

// Grid is a grid point's values: how its tables are drawn, sampled and trained. It is
// the one home of the grid's axes: stages.Point embeds it (with the point's id, number
// of tables and methods, and its validation), summary.json reports it per point
// (PointSummary.Params) and SetColumns writes it into a result row. AxisDefs describes
// each axis once (its default, flag, spec key, documentation and report label); adding
// an axis is a field here, its entry in AxisDefs and, if the results should carry it, a
// column in SetColumns.
type Grid struct {
	XValues   int     `json:"x_values"`      // |X|: x takes values 0..XValues-1
	Classes   int     `json:"classes"`       // K: y takes values 0..Classes-1
	Encoding  string  `json:"encoding"`      // "scalar" or "onehot"
	Generator string  `json:"generator"`     // "uniform", "dirichlet:ALPHA" or "file"
	Samples   int     `json:"samples"`       // N draws per table
	Model     string  `json:"model"`         // "linear" or "mlp:H1,H2,..."
	LR        float64 `json:"lr"`            // Adam learning rate
	Steps     int     `json:"steps"`         // optimiser steps
	BatchSize int     `json:"batch_size"`    // 0 = full batch (cell counts)
	Replicate int     `json:"replicate"`     // replicate index, part of every seed
	PxWeight  float64 `json:"jem_px_weight"` // weight of log p(x) in the jem, oracle and sampler losses

	// The task: "table" (random joint tables, the fields above), a continuous 2-D
	// task "gmm:K,C", "moons:SIGMA", "circles:SIGMA", or "file" (--tasks_from), a
	// binary table "bits:D,K" or a block task "blocks:…" (tasks.Of names them all). A 2-D
	// task is evaluated on a Grid×Grid grid over the box [−Box, Box]²: its points have
	// XValues = Grid² (the grid cells) and Classes = K, so every table metric applies
	// to the grid joint.
	Task      string  `json:"task"`
	GridCells int     `json:"grid"`       // 2-D: evaluation grid cells per side
	Box       float64 `json:"box"`        // 2-D: half-width of the box
	TrainGrid int     `json:"train_grid"` // 2-D exact jem and oracle: training grid cells per side

	// Binary tasks "bits:D,K": the truth's product-Bernoulli components per class.
	Components int `json:"components"`

	// The sampler methods' options (sgld on 2-D and block tasks, pcd on tables and
	// binary tables).
	SGLDPreset string  `json:"sgld_preset"` // "official" (std 0.01), "langevin" (std √(2·lr)) or "noisefree" (std 0, as SADA-JEM runs it)
	SGLDLR     float64 `json:"sgld_lr"`     // SGLD step size on ∇x LSE_y f(x)
	SGLDStd    float64 `json:"sgld_std"`    // SGLD noise standard deviation (0: the preset's)
	SGLDSteps  int     `json:"sgld_steps"`  // SGLD steps per training step
	SGLDClamp  bool    `json:"sgld_clamp"`  // clamp the chains to the box after every step
	BufferSize int     `json:"buffer_size"` // replay buffer (persistent chains) per run
	ReinitFreq float64 `json:"reinit_freq"` // per-sample probability of a uniform restart
	ChainSteps int     `json:"chain_steps"` // pcd: Metropolis–Hastings steps per training step
	Proposal   string  `json:"proposal"`    // pcd: "uniform", "neighbour" or "gwg"

	// The options of the recipes of issue 21, one struct that the result rows embed
	// too: a new method's option is a field there and its entry in AxisDefs.
	Recipe

	// Options are the options the method packages register (methods/<name>): a
	// method's own, in its own form.
	Options Options `json:"options,omitempty"`
}

// Recipe are the options of the training recipes beside sgld and pcd (mala,
// jarzynski, shortrun, ed): Grid's axes and, embedded in ResultRow, its columns.
type Recipe struct {
	StepSize      float64 `json:"step_size" parquet:"step_size"`           // mala, jarzynski: the initial Langevin step η (adapted)
	ESSResample   float64 `json:"ess_resample" parquet:"ess_resample"`     // jarzynski: resample when the ESS falls under this share of the walkers
	ShortRunStep  float64 `json:"shortrun_step" parquet:"shortrun_step"`   // shortrun: Langevin step η
	ShortRunNoise bool    `json:"shortrun_noise" parquet:"shortrun_noise"` // shortrun: Langevin noise √(2η)ξ (false: noise-free)
	EnergyL2      float64 `json:"energy_l2" parquet:"energy_l2"`           // shortrun: weight of the energies' L2 penalty
	EDNegatives   int     `json:"ed_m" parquet:"ed_m"`                     // ed: negatives per data point M
	EDT           float64 `json:"ed_t" parquet:"ed_t"`                     // ed: variance t of each Gaussian perturbation
	EDW           float64 `json:"ed_w" parquet:"ed_w"`                     // ed: stabiliser w
}

// TaskTable is the Task of random joint tables.
const TaskTable = "table"

// SGLDNoise is the SGLD noise standard deviation: SGLDStd, or when 0 the preset's
// (official: 0.01; langevin: √(2·SGLDLR)).
func (g Grid) SGLDNoise() float64 {
	switch {
	case g.SGLDStd > 0:
		return g.SGLDStd
	case g.SGLDPreset == "langevin":
		return math.Sqrt(2 * g.SGLDLR)
	case g.SGLDPreset == "noisefree":
		return 0
	}
	return 0.01
}

// SetColumns writes the grid's columns of a result row. The row's px_weight is the
// weight its run trained with: the grid's, but 0 for the baseline (pxWeight).
func (g Grid) SetColumns(r *ResultRow, pxWeight float64) {
	r.XValues, r.Classes, r.Encoding, r.Generator = int64(g.XValues), int64(g.Classes), g.Encoding, g.Generator
	r.Model, r.Samples, r.Steps, r.LR = g.Model, int64(g.Samples), int64(g.Steps), g.LR
	r.BatchSize, r.Replicate, r.PxWeight = int64(g.BatchSize), int64(g.Replicate), pxWeight
	r.Task, r.GridCells, r.Box, r.TrainGrid = g.Task, int64(g.GridCells), g.Box, int64(g.TrainGrid)
	r.SGLDPreset, r.SGLDLR, r.SGLDStd, r.SGLDSteps, r.SGLDClamp = g.SGLDPreset, g.SGLDLR, g.SGLDStd, int64(g.SGLDSteps), g.SGLDClamp
	r.BufferSize, r.ReinitFreq, r.ChainSteps, r.Proposal = int64(g.BufferSize), g.ReinitFreq, int64(g.ChainSteps), g.Proposal
	r.Recipe = g.Recipe
}

// GridOf reads a grid back from a result row's columns. A row's px_weight is its run's
// (0 for the baseline), so the grid's px weight is that of a row of another method.
func GridOf(r ResultRow) Grid {
	return Grid{XValues: int(r.XValues), Classes: int(r.Classes), Encoding: r.Encoding, Generator: r.Generator,
		Samples: int(r.Samples), Model: r.Model, LR: r.LR, Steps: int(r.Steps), BatchSize: int(r.BatchSize),
		Replicate: int(r.Replicate), PxWeight: r.PxWeight,
		Task: r.Task, GridCells: int(r.GridCells), Box: r.Box, TrainGrid: int(r.TrainGrid),
		SGLDPreset: r.SGLDPreset, SGLDLR: r.SGLDLR, SGLDStd: r.SGLDStd, SGLDSteps: int(r.SGLDSteps), SGLDClamp: r.SGLDClamp,
		BufferSize: int(r.BufferSize), ReinitFreq: r.ReinitFreq, ChainSteps: int(r.ChainSteps), Proposal: r.Proposal,
		Recipe: r.Recipe, Options: r.Options()}
}
