package schemas

import (
	"fmt"
	"math"
	"strconv"
)

// Grid is a grid point's values: how its tables are drawn, sampled and trained. It is
// the one home of the grid's axes: stages.Point embeds it (with the point's id, number
// of tables and methods, and its validation), summary.json reports it per point
// (PointSummary.Params), SetColumns writes it into a result row and GridAxes describes
// each axis for the report's sweep figures. Adding an axis is a field here, its entry
// in GridAxes and (if the results should carry it) a column in SetColumns; the sweep
// spec and the flags then say how a user sets it.
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

	// The task: "table" (random joint tables, the fields above), or a continuous 2-D
	// task "gmm:K,C", "moons:SIGMA", "circles:SIGMA", or "file" (--tasks_from). A 2-D
	// task is evaluated on a Grid×Grid grid over the box [−Box, Box]²: its points have
	// XValues = Grid² (the grid cells) and Classes = K, so every table metric applies
	// to the grid joint.
	Task      string  `json:"task"`
	GridCells int     `json:"grid"`       // 2-D: evaluation grid cells per side
	Box       float64 `json:"box"`        // 2-D: half-width of the box
	TrainGrid int     `json:"train_grid"` // 2-D exact jem and oracle: training grid cells per side

	// The sampler methods' options (sgld on 2-D tasks, pcd on tables).
	SGLDPreset string  `json:"sgld_preset"` // "official" (std 0.01) or "langevin" (std √(2·lr))
	SGLDLR     float64 `json:"sgld_lr"`     // SGLD step size on ∇x LSE_y f(x)
	SGLDStd    float64 `json:"sgld_std"`    // SGLD noise standard deviation (0: the preset's)
	SGLDSteps  int     `json:"sgld_steps"`  // SGLD steps per training step
	SGLDClamp  bool    `json:"sgld_clamp"`  // clamp the chains to the box after every step
	BufferSize int     `json:"buffer_size"` // replay buffer (persistent chains) per run
	ReinitFreq float64 `json:"reinit_freq"` // per-sample probability of a uniform restart
	ChainSteps int     `json:"chain_steps"` // pcd: Metropolis–Hastings steps per training step
	Proposal   string  `json:"proposal"`    // pcd: "uniform" or "neighbour"
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
}

// GridOf reads a grid back from a result row's columns. A row's px_weight is its run's
// (0 for the baseline), so the grid's px weight is that of a row of another method.
func GridOf(r ResultRow) Grid {
	return Grid{XValues: int(r.XValues), Classes: int(r.Classes), Encoding: r.Encoding, Generator: r.Generator,
		Samples: int(r.Samples), Model: r.Model, LR: r.LR, Steps: int(r.Steps), BatchSize: int(r.BatchSize),
		Replicate: int(r.Replicate), PxWeight: r.PxWeight,
		Task: r.Task, GridCells: int(r.GridCells), Box: r.Box, TrainGrid: int(r.TrainGrid),
		SGLDPreset: r.SGLDPreset, SGLDLR: r.SGLDLR, SGLDStd: r.SGLDStd, SGLDSteps: int(r.SGLDSteps), SGLDClamp: r.SGLDClamp,
		BufferSize: int(r.BufferSize), ReinitFreq: r.ReinitFreq, ChainSteps: int(r.ChainSteps), Proposal: r.Proposal}
}

// Axis describes one grid axis for the report: Key names its figures (kl_vs_<key>,
// heatmap_<key>_<key>), Label its axis, Numeric whether values sit at their own
// position on a numeric axis (else at their category's index), and Value its value at
// a grid point.
type Axis struct {
	Key, Label string
	Numeric    bool
	Value      func(g *Grid) AxisValue
}

// AxisValue is an axis's value at a point: Num (then Tie) order numeric values, Str
// categorical ones, Label is how it is printed.
type AxisValue struct {
	Num, Tie float64
	Str      string
	Label    string
}

func numValue(v float64) AxisValue {
	return AxisValue{Num: v, Label: strconv.FormatFloat(v, 'g', -1, 64)}
}
func intValue(v int) AxisValue    { return AxisValue{Num: float64(v), Label: fmt.Sprint(v)} }
func strValue(s string) AxisValue { return AxisValue{Str: s, Label: s} }

// GridAxes are the grid's axes, in the report's order. Replicate is not an axis: its
// points are repeats, pooled.
func GridAxes() []Axis {
	return []Axis{
		{Key: "size", Label: "table size X×K", Value: func(g *Grid) AxisValue {
			return AxisValue{Num: float64(g.XValues * g.Classes), Tie: float64(g.XValues), Label: fmt.Sprintf("%d×%d", g.XValues, g.Classes)}
		}},
		{Key: "samples", Label: "samples N", Numeric: true, Value: func(g *Grid) AxisValue { return intValue(g.Samples) }},
		{Key: "lr", Label: "learning rate", Numeric: true, Value: func(g *Grid) AxisValue { return numValue(g.LR) }},
		{Key: "steps", Label: "optimiser steps", Numeric: true, Value: func(g *Grid) AxisValue { return intValue(g.Steps) }},
		{Key: "batch_size", Label: "batch size", Numeric: true, Value: func(g *Grid) AxisValue {
			if g.BatchSize == 0 {
				return AxisValue{Label: "full"}
			}
			return intValue(g.BatchSize)
		}},
		{Key: "model", Label: "model", Value: func(g *Grid) AxisValue { return strValue(g.Model) }},
		{Key: "encoding", Label: "encoding", Value: func(g *Grid) AxisValue { return strValue(g.Encoding) }},
		{Key: "generator", Label: "generator", Value: func(g *Grid) AxisValue { return strValue(g.Generator) }},
		{Key: "px_weight", Label: "JEM p(x) weight", Numeric: true, Value: func(g *Grid) AxisValue { return numValue(g.PxWeight) }},
		{Key: "task", Label: "task", Value: func(g *Grid) AxisValue { return strValue(g.Task) }},
		{Key: "grid", Label: "evaluation grid cells per side", Numeric: true, Value: func(g *Grid) AxisValue { return intValue(g.GridCells) }},
		{Key: "box", Label: "box half-width", Numeric: true, Value: func(g *Grid) AxisValue { return numValue(g.Box) }},
		{Key: "train_grid", Label: "exact JEM training grid per side", Numeric: true, Value: func(g *Grid) AxisValue { return intValue(g.TrainGrid) }},
		{Key: "sgld_preset", Label: "SGLD preset", Value: func(g *Grid) AxisValue { return strValue(g.SGLDPreset) }},
		{Key: "sgld_lr", Label: "SGLD step size", Numeric: true, Value: func(g *Grid) AxisValue { return numValue(g.SGLDLR) }},
		{Key: "sgld_std", Label: "SGLD noise std", Numeric: true, Value: func(g *Grid) AxisValue { return numValue(g.SGLDNoise()) }},
		{Key: "sgld_steps", Label: "SGLD steps per training step", Numeric: true, Value: func(g *Grid) AxisValue { return intValue(g.SGLDSteps) }},
		{Key: "sgld_clamp", Label: "SGLD clamped to the box", Value: func(g *Grid) AxisValue { return strValue(strconv.FormatBool(g.SGLDClamp)) }},
		{Key: "buffer_size", Label: "replay buffer size", Numeric: true, Value: func(g *Grid) AxisValue { return intValue(g.BufferSize) }},
		{Key: "reinit_freq", Label: "buffer restart frequency", Numeric: true, Value: func(g *Grid) AxisValue { return numValue(g.ReinitFreq) }},
		{Key: "chain_steps", Label: "PCD chain steps per training step", Numeric: true, Value: func(g *Grid) AxisValue { return intValue(g.ChainSteps) }},
		{Key: "proposal", Label: "PCD proposal", Value: func(g *Grid) AxisValue { return strValue(g.Proposal) }},
	}
}
