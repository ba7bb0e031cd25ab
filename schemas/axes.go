package schemas

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// AxisDef is the one description of a grid axis, a field of Grid. The command-line
// flags (pipelines/internal/launch), the sweep spec's keys (pipelines/sweep), the
// report's sweep figures (GridAxes) and the axes' documentation (AxesMarkdown) are all
// derived from AxisDefs.
type AxisDef struct {
	// Field is the axis's field of Grid and its default (FieldOf). The field's JSON name
	// is the axis's Key.
	Field Field
	// Flag is the name of the axis's flag where it is not the key; NoFlag: the axis has
	// no flag.
	Flag string
	// Doc is one line on the axis: its flag's help and its documentation.
	Doc string
	// Label is the axis's label on the report's sweep figures; "" keeps the axis off the
	// report.
	Label string
	// Figure is the axis's key in the report's figure names (kl_vs_<Figure>) where it
	// is not the key.
	Figure string
	// Value is the axis's value on the report where it is not its field's.
	Value func(g *Grid) AxisValue

	// key is Key, computed once when the axis joins AxisDefs (init, RegisterOption):
	// Key's reflection over Grid is not on any per-run path.
	key string
}

// NoFlag as an AxisDef's Flag: the axis has no flag.
const NoFlag = "-"

// DefaultBox is the box's default half-width (--box): every random gmm component
// (means in ±2, sd ≤ 0.6) and every default moons and circles draw then leaves less
// than prob.MaxOutsideMass outside it (the check of tasks/plane).
const DefaultBox = 5.0

// AxisDefs are the grid's axes in a sweep's enumeration order: a sweep spec's points
// are numbered row-major over them (after the spec's shape), so an axis added here
// leaves the points of the specs that do not set it as they were, and replicate stays
// last so that repeats vary fastest. Adding an axis is a field of Grid (its JSON name
// is the axis's key), its entry here and, if the results should carry it, a column in
// SetColumns; then `go test ./schemas ./pipelines/sweep -update_axes` regenerates the
// documentation (testdata/axes.md) and the sweep spec's types.
var AxisDefs = []AxisDef{
	{Field: FieldOf(2, func(g *Grid) *int { return &g.XValues }), Doc: "number of x values |X|"},
	{Field: FieldOf(2, func(g *Grid) *int { return &g.Classes }), Doc: "number of classes K"},
	{Field: FieldOf("scalar", func(g *Grid) *string { return &g.Encoding }), Flag: "x_encoding",
		Doc: "how x enters the model: scalar or onehot", Label: "encoding"},
	{Field: FieldOf("uniform", func(g *Grid) *string { return &g.Generator }),
		Doc: "table generator: uniform (X·K uniforms in (0,1), normalised) or dirichlet:ALPHA", Label: "generator"},
	{Field: FieldOf("linear", func(g *Grid) *string { return &g.Model }), Doc: "model: linear or mlp:H1,H2,... (on the D bits of a binary task); on a block task additive:H1,H2,... (one MLP per block, logits summed; mlp: means the same) or joint:H1,H2,... (one MLP on all D coordinates; exact jem trains the additive reference)", Label: "model"},
	{Field: FieldOf(1000, func(g *Grid) *int { return &g.Samples }), Doc: "N: i.i.d. samples drawn per table", Label: "samples N"},
	{Field: FieldOf(0, func(g *Grid) *int { return &g.BatchSize }), Doc: "minibatch size; 0 = full batch on cell counts",
		Label: "batch size", Value: func(g *Grid) AxisValue {
			if g.BatchSize == 0 {
				return AxisValue{Label: "full"}
			}
			return intValue(g.BatchSize)
		}},
	{Field: FieldOf(0.05, func(g *Grid) *float64 { return &g.LR }), Doc: "Adam learning rate", Label: "learning rate"},
	{Field: FieldOf(300, func(g *Grid) *int { return &g.Steps }), Doc: "optimiser steps", Label: "optimiser steps"},
	{Field: FieldOf(1, func(g *Grid) *float64 { return &g.PxWeight }),
		Doc:   "weight of the log p(x) term in the jem, oracle and sampler losses (0 turns jem into the baseline)",
		Label: "JEM p(x) weight", Figure: "px_weight"},
	{Field: FieldOf(TaskTable, func(g *Grid) *string { return &g.Task }),
		Doc: "task: table (random joint tables), or a continuous 2-D task gmm:K,C (K classes of C Gaussians), " +
			"moons:SIGMA or circles:SIGMA; a 2-D task defaults to --model=mlp:32,32 --lr=0.003 --steps=1500 --batch_size=64 --samples=2000; " +
			"or a binary task bits:D,K (x in {0,1}^D, every KL exact by enumeration, D ≤ 20), or a block task blocks:B,<2-D task> (D = 2B)",
		Label: "task"},
	{Field: FieldOf(64, func(g *Grid) *int { return &g.GridCells }), Doc: "2-D tasks: evaluation grid cells per side",
		Label: "evaluation grid cells per side"},
	{Field: FieldOf(DefaultBox, func(g *Grid) *float64 { return &g.Box }),
		Doc: "2-D tasks: the box [-box, box]² of the grid, the buffer's restarts and the clamp", Label: "box half-width"},
	{Field: FieldOf(32, func(g *Grid) *int { return &g.TrainGrid }),
		Doc: "2-D tasks: exact jem's and oracle's training grid cells per side (a multiple of 4)", Label: "exact JEM training grid per side"},
	{Field: FieldOf(3, func(g *Grid) *int { return &g.Components }),
		Doc: "binary tasks (bits:D,K): product-Bernoulli components per class of the truth", Label: "components per class"},
	{Field: FieldOf("official", func(g *Grid) *string { return &g.SGLDPreset }),
		Doc: "sgld: official (noise std 0.01), langevin (std √(2·sgld_lr)) or noisefree (std 0, as SADA-JEM)", Label: "SGLD preset"},
	{Field: FieldOf(1, func(g *Grid) *float64 { return &g.SGLDLR }), Doc: "sgld: step size on ∇x logsumexp f(x)", Label: "SGLD step size"},
	{Field: FieldOf(0, func(g *Grid) *float64 { return &g.SGLDStd }), Doc: "sgld: noise standard deviation (0 = the preset's)",
		Label: "SGLD noise std", Value: func(g *Grid) AxisValue { return numValue(g.SGLDNoise()) }},
	{Field: FieldOf(20, func(g *Grid) *int { return &g.SGLDSteps }), Doc: "sgld, mala, jarzynski and shortrun: sampler steps per training step",
		Label: "SGLD steps per training step"},
	{Field: FieldOf(false, func(g *Grid) *bool { return &g.SGLDClamp }), Doc: "sgld: clamp the chains to the box after every SGLD step",
		Label: "SGLD clamped to the box"},
	{Field: FieldOf(10000, func(g *Grid) *int { return &g.BufferSize }), Doc: "sgld, mala and pcd: replay buffer size per run",
		Label: "replay buffer size"},
	{Field: FieldOf(0.05, func(g *Grid) *float64 { return &g.ReinitFreq }), Doc: "sgld, mala and pcd: per-sample probability of a uniform restart",
		Label: "buffer restart frequency"},
	{Field: FieldOf(5, func(g *Grid) *int { return &g.ChainSteps }), Doc: "pcd: Metropolis–Hastings steps per training step",
		Label: "PCD chain steps per training step"},
	{Field: FieldOf("uniform", func(g *Grid) *string { return &g.Proposal }),
		Doc: "pcd: Metropolis–Hastings proposal, uniform (any x), neighbour (x±1) or gwg (x' ≠ x with probability ∝ √q(x'): Gibbs with gradients with exact differences)", Label: "PCD proposal"},
	{Field: FieldOf(0.01, func(g *Grid) *float64 { return &g.StepSize }),
		Doc: "mala and jarzynski: the initial Langevin step η of x += η∇log q(x) + √(2η)ξ, adapted per run toward 0.574 acceptance", Label: "initial Langevin step η"},
	{Field: FieldOf(0.5, func(g *Grid) *float64 { return &g.ESSResample }),
		Doc: "jarzynski: resample the walkers when their weights' effective sample size falls under this share of them", Label: "ESS share that resamples"},
	{Field: FieldOf(0.01, func(g *Grid) *float64 { return &g.ShortRunStep }),
		Doc: "shortrun: Langevin step η of the short-run chains", Label: "short-run step η"},
	{Field: FieldOf(true, func(g *Grid) *bool { return &g.ShortRunNoise }),
		Doc: "shortrun: Langevin noise √(2η)ξ on the short-run chains (false: noise-free ascent)", Label: "short-run noise"},
	{Field: FieldOf(1.0, func(g *Grid) *float64 { return &g.EnergyL2 }),
		Doc: "shortrun: weight of the L2 penalty on energies, mean logsumexp f² over data and negatives", Label: "energy L2 weight"},
	{Field: FieldOf(4, func(g *Grid) *int { return &g.EDNegatives }), Doc: "ed: negatives per data point M", Label: "ED negatives M"},
	{Field: FieldOf(1.0, func(g *Grid) *float64 { return &g.EDT }), Doc: "ed: variance t of each Gaussian perturbation", Label: "ED perturbation t"},
	{Field: FieldOf(1.0, func(g *Grid) *float64 { return &g.EDW }),
		Doc: "ed: stabiliser w (1 counts the data point as one of the M+1 draws: the exact minimiser is the truth)", Label: "ED stabiliser w"},
	{Field: FieldOf(0, func(g *Grid) *int { return &g.Replicate }), Flag: NoFlag, Doc: "replicate index, part of every seed"},
}

// Field is an axis's field of Grid, with its default: see FieldOf.
type Field interface {
	// Default is the axis's default: an int, float64, string or bool.
	Default() any
	// Ptr is the field of g: an *int, *float64, *string or *bool.
	Ptr(g *Grid) any
	// Get is the field's value on g, of Default's type.
	Get(g *Grid) any
	// Set sets the field of g to v, which must be of Default's type.
	Set(g *Grid, v any)
}

// FieldOf is the field of Grid that ptr returns (the same field of every grid), with
// its default def. It panics unless ptr returns a field of the Grid it is given (not of
// something the grid points to).
func FieldOf[T int | float64 | string | bool](def T, ptr func(g *Grid) *T) Field {
	// The field's offset, read once: reading a field through it hands g to no function
	// value, so a *Grid on the per-run path stays where it is (a call through ptr made
	// every caller's grid, and what holds it, escape to the heap).
	var g Grid
	off := uintptr(unsafe.Pointer(ptr(&g))) - uintptr(unsafe.Pointer(&g))
	if off+unsafe.Sizeof(def) > unsafe.Sizeof(g) {
		panic("schemas: FieldOf's ptr must return a field of its grid")
	}
	return field[T]{def: def, off: off}
}

type field[T int | float64 | string | bool] struct {
	def T
	off uintptr // the field's offset in Grid
}

func (f field[T]) ptr(g *Grid) *T     { return (*T)(unsafe.Add(unsafe.Pointer(g), f.off)) }
func (f field[T]) Default() any       { return f.def }
func (f field[T]) Ptr(g *Grid) any    { return f.ptr(g) }
func (f field[T]) Get(g *Grid) any    { return *f.ptr(g) }
func (f field[T]) Set(g *Grid, v any) { *f.ptr(g) = v.(T) }

// appendValue appends the value of field f on g as text (the memo key of ValuesJSON;
// an option unset on g appends a marker), allocating nothing beyond b: a type switch
// on the concrete fields, so b never passes through an interface (which would move
// the caller's stack buffer to the heap).
func appendValue(b []byte, f Field, g *Grid) []byte {
	switch f := f.(type) {
	case field[int]:
		return strconv.AppendInt(b, int64(*f.ptr(g)), 10)
	case field[float64]:
		return strconv.AppendFloat(b, *f.ptr(g), 'g', -1, 64)
	case field[string]:
		return append(b, *f.ptr(g)...)
	case field[bool]:
		return strconv.AppendBool(b, *f.ptr(g))
	case optionField[int]:
		return appendOption(b, f.key, g)
	case optionField[float64]:
		return appendOption(b, f.key, g)
	case optionField[string]:
		return appendOption(b, f.key, g)
	case optionField[bool]:
		return appendOption(b, f.key, g)
	}
	panic("schemas: a field not made by FieldOf or OptionField")
}

func appendOption(b []byte, key string, g *Grid) []byte {
	if s, ok := g.Options[key]; ok {
		return append(append(b, '='), s...)
	}
	return append(b, '-') // unset: the default
}

// axisIndex is AxisDefs's position by key (indexAxes keeps it): AxisByKey is a map
// look-up, not a scan that derives every axis's key.
var axisIndex map[string]int

func init() { indexAxes() }

// indexAxes computes every axis's key once and indexes AxisDefs by it; init and
// RegisterOption (the only writers of AxisDefs) call it.
func indexAxes() {
	axisIndex = make(map[string]int, len(AxisDefs))
	for i := range AxisDefs {
		if AxisDefs[i].key == "" {
			AxisDefs[i].key = AxisDefs[i].deriveKey()
		}
		axisIndex[AxisDefs[i].key] = i
	}
}

// StructField is the axis's field of Grid, found by its address.
func (a AxisDef) StructField() reflect.StructField {
	var g Grid
	addr := reflect.ValueOf(a.Field.Ptr(&g)).Pointer()
	v := reflect.ValueOf(&g).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) { // the fields of embedded structs (Recipe) too
		if !f.Anonymous && v.FieldByIndex(f.Index).Addr().Pointer() == addr {
			return f
		}
	}
	panic("schemas: an AxisDef's Field is not a field of the Grid it is given")
}

// Key is the axis's name: its field's JSON name (summary.json's params), its key in a
// sweep spec (defaults and grid) and, unless Flag says otherwise, its flag's name.
func (a AxisDef) Key() string {
	if a.key != "" {
		return a.key
	}
	return a.deriveKey()
}

// deriveKey is Key from the field: an option's key, or the Grid field's JSON name.
func (a AxisDef) deriveKey() string {
	if o, ok := a.Field.(interface{ optionKey() string }); ok {
		return o.optionKey()
	}
	key, _, _ := strings.Cut(a.StructField().Tag.Get("json"), ",")
	return key
}

// FlagName is the name of the axis's flag ("" for none).
func (a AxisDef) FlagName() string {
	switch a.Flag {
	case NoFlag:
		return ""
	case "":
		return a.Key()
	}
	return a.Flag
}

// Type names the axis's type: int, float, string or bool.
func (a AxisDef) Type() string {
	switch a.Field.Default().(type) {
	case int:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	}
	return "bool"
}

// AxisByKey is the axis of the key.
func AxisByKey(key string) (AxisDef, bool) {
	if i, ok := axisIndex[key]; ok && i < len(AxisDefs) && AxisDefs[i].key == key {
		return AxisDefs[i], true
	}
	return AxisDef{}, false
}

// Settings writes the axes of the keys at g as "key=value, ...": an axis's report
// value where it has one (sgld_std: the preset's noise), else its field's.
func Settings(g Grid, keys []string) string {
	var parts []string
	for _, k := range keys {
		a, ok := AxisByKey(k)
		if !ok {
			continue
		}
		v := fmt.Sprint(a.Field.Get(&g))
		if a.Value != nil {
			v = a.Value(&g).Label
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ", ")
}

// DefaultGrid is the grid of the axes' defaults: the flags' defaults, and a sweep
// spec's built-in ones.
func DefaultGrid() Grid {
	var g Grid
	for _, a := range AxisDefs {
		a.Field.Set(&g, a.Field.Default())
	}
	return g
}

// AxesMarkdown is the documentation of the axes: a Markdown table of their flags (—
// for none), spec keys, types, defaults and Docs, in AxisDefs's order.
func AxesMarkdown() string {
	var b strings.Builder
	b.WriteString("| flag | spec key | type | default | meaning |\n|---|---|---|---|---|\n")
	for _, a := range AxisDefs {
		flag := "—"
		if name := a.FlagName(); name != "" {
			flag = "`--" + name + "`"
		}
		def := fmt.Sprint(a.Field.Default())
		if a.Type() == "string" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", flag, a.Key(), a.Type(), def, strings.ReplaceAll(a.Doc, "|", `\|`))
	}
	return b.String()
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

// reportLead are the axes the report shows first after the table size, in this order:
// the training budget and the model.
var reportLead = []string{"samples", "lr", "steps", "batch_size", "model"}

// GridAxes are the grid's axes, in the report's order: the table size X×K (x_values
// and classes together), the training budget and the model (reportLead), then the other AxisDefs
// with a Label in their order. An int or float axis is numeric, a string or bool axis
// categorical. Replicate has no label: its points are repeats, pooled.
func GridAxes() []Axis {
	axes := []Axis{{Key: "size", Label: "table size X×K", Value: func(g *Grid) AxisValue {
		return AxisValue{Num: float64(g.XValues * g.Classes), Tie: float64(g.XValues), Label: fmt.Sprintf("%d×%d", g.XValues, g.Classes)}
	}}}
	lead := func(a AxisDef) int {
		if i := slices.Index(reportLead, a.Key()); i >= 0 {
			return i
		}
		return len(reportLead)
	}
	defs := slices.Clone(AxisDefs)
	slices.SortStableFunc(defs, func(a, b AxisDef) int { return cmp.Compare(lead(a), lead(b)) })
	for _, a := range defs {
		if a.Label != "" {
			axes = append(axes, a.reportAxis())
		}
	}
	return axes
}

// ReportKey is the axis's key on the report (GridAxes): Figure, or its key.
func (a AxisDef) ReportKey() string { return cmp.Or(a.Figure, a.Key()) }

// reportAxis is the axis on the report.
func (a AxisDef) reportAxis() Axis {
	ax := Axis{Key: a.ReportKey(), Label: a.Label, Numeric: a.Type() == "int" || a.Type() == "float", Value: a.Value}
	if ax.Value == nil {
		ax.Value = func(g *Grid) AxisValue {
			switch v := a.Field.Get(g).(type) {
			case int:
				return intValue(v)
			case float64:
				return numValue(v)
			default:
				return strValue(fmt.Sprint(v))
			}
		}
	}
	return ax
}
