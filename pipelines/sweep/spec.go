package main

// # Sweep spec format
//
// A sweep spec is a YAML file (or JSON: a .json file, or any text that is a JSON object)
// that names a grid of experiment settings. The sweep runs the Cartesian product of
// the grid's axes; every combination is one grid point, and every grid point draws
// `tables` random joint tables and trains every listed method on each of them.
//
//	name: kl-vs-n              # required: [a-z0-9-], at most 63 characters, starts and
//	                           #   ends with a letter or digit (used in job names and paths)
//	description: KL vs N       # optional free text
//	tables: 100                # required: tables per grid point
//	methods: [baseline, jem, oracle]   # optional, default all three (a list, or
//	                           #   a comma-separated string "baseline,jem")
//	replicates: 3              # optional shorthand for the axis  replicate: [0, 1, 2]
//	defaults:                  # optional: one fixed value for axes that are not in grid
//	  steps: 300
//	  encoding: onehot
//	grid:                      # optional: each key is an axis with a non-empty list
//	  samples: [30, 100, 1000, 1e4]
//	  lr: [0.01, 0.05]
//
// Axes (a key of defaults or of grid), in enumeration order: shape, then the grid
// axes of schemas.AxisDefs in their order (replicate last). Their keys, types, built-in
// defaults (the control pipeline's flag defaults) and meanings are the table of
// schemas.AxesMarkdown, schemas/testdata/axes.md; the types Defaults and Grid, a field
// per axis, are generated from them (spec_axes.go). Besides them:
//
//	shape          table shape "XxK", e.g. "4x2" (sets x_values and classes; use either
//	               shape or x_values/classes, not both)
//
// The reference implementation's names of axes (launch.RefFlags: n_steps for
// sgld_steps, p_x_weight for jem_px_weight) are keys too, in defaults and in grid; an
// alias and its axis in the same place is an error, and the spec records the axis.
//
// Integers may be written as integral floats (1e4); numbers must not be quoted and
// strings may be quoted or not, but must be strings (model: 3 is an error). An axis may
// appear in defaults or in grid, not both, and `replicates` excludes a replicate axis.
// Values within one grid axis must be distinct (generators, models, tasks and shapes
// are compared in canonical form, so "mlp: 16" equals "mlp:16").
//
// Point order: grid points are enumerated row-major over the axes in the order above,
// whatever order the file lists them in: the last grid axis present (usually
// replicate) varies fastest; within an axis the values keep the order of the list.
// Point IDs are 0..n-1 in that order, so a spec always yields the same IDs.
//
// Ranges and limits: every grid point must pass stages.Point.Validate, the one place
// that states the ranges of the values and the limits of a distributed run
// (stages/limits.go); the error names the grid point's values. A sweep has at most
// 10,000 grid points, and stages.CheckGrid bounds the tables and draws over all of
// them. A local run is further limited before it starts (stages.Options.CheckLimits).
//
// Parsing is strict (gopkg.in/yaml.v3 with KnownFields): unknown keys, duplicate keys,
// values of the wrong type and a second YAML document are errors that name the line,
// e.g. "spec: line 4: field lrr not found in type main.Grid"; a null value counts as
// not given (except in a grid list, where it is an error). YAML anchors, aliases and
// merge keys (<<) work. JSON is read as YAML, after json.Compact (for tab indentation).
// --spec takes a local path or a storage URL (file://, gs://, s3://, mem://), opened as
// schemas opens locations (storage.LocalDir, storage.OpenBucket).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// Limits of a sweep (the same as the stages' limits on a distributed run).
const (
	MaxPoints      = tasks.MaxPoints // grid points per sweep
	MaxTotalTables = tasks.MaxTables // tables × points
	maxSpecBytes   = 1 << 20
)

// Spec is a parsed sweep spec, as written. Its JSON encoding (config.json records it)
// is itself a valid spec that yields the same points.
type Spec struct {
	Name        Str      `yaml:"name" json:"name"`
	Description Str      `yaml:"description" json:"description,omitempty"`
	Tables      Int      `yaml:"tables" json:"tables"`
	Methods     Methods  `yaml:"methods" json:"methods,omitempty"`
	Replicates  *Int     `yaml:"replicates" json:"replicates,omitempty"`
	Defaults    Defaults `yaml:"defaults" json:"defaults"`
	Grid        Grid     `yaml:"grid" json:"grid"`
}

var (
	nameRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	shapeRE = regexp.MustCompile(`^([0-9]{1,6})x([0-9]{1,6})$`)
)

// Int is an integer that may also be written as an integral number, such as 1e4.
type Int int

// Str is a string that must be written as a string, not as a number or a boolean.
type Str string

// List is a grid axis: a non-empty list without nulls.
type List[T any] []T

// Methods is a list of methods, written as a list or as a comma-separated string.
type Methods []string

// typeError is an error at n in the form of yaml.v3's own ("line 3: ...").
func typeError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}

// describe names a node's tag, and its value if it is a scalar.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.ShortTag() + " " + echo(n.Value)
	}
	return n.ShortTag()
}

// echo quotes a user's value for a message, cut to 80 characters.
func echo(s string) string {
	if r := []rune(s); len(r) > 80 {
		return fmt.Sprintf("%q... (%d characters)", string(r[:80]), len(r))
	}
	return strconv.Quote(s)
}

func (v *Int) UnmarshalYAML(n *yaml.Node) error {
	var f float64
	switch {
	case n.ShortTag() == "!!int" && n.Decode((*int)(v)) == nil:
		return nil
	case n.ShortTag() == "!!float" && n.Decode(&f) == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53:
		*v = Int(f)
		return nil
	}
	return typeError(n, "cannot unmarshal %s into an integer", describe(n))
}

func (v *Str) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return typeError(n, "cannot unmarshal %s into a string", describe(n))
	}
	*v = Str(n.Value)
	return nil
}

func (l *List[T]) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return typeError(n, "a grid axis is a non-empty list of values, got %s (a single value goes under defaults)", describe(n))
	}
	*l = make(List[T], len(n.Content))
	for i, e := range n.Content {
		if e.ShortTag() == "!!null" {
			return typeError(e, "null in a grid axis")
		}
		if err := e.Decode(&(*l)[i]); err != nil {
			return err
		}
	}
	return nil
}

func (m *Methods) UnmarshalYAML(n *yaml.Node) error {
	list := []string{n.Value}
	if n.Kind != yaml.ScalarNode {
		if err := n.Decode(&list); err != nil {
			return err
		}
	}
	ms, err := methods.Parse(strings.Join(list, ","))
	if err != nil {
		return typeError(n, "methods: %v", err)
	}
	*m = ms
	return nil
}

// ReadSpec reads and parses the spec at location: a local path or a storage URL
// (file:///abs/spec.yaml, file://./rel/spec.yaml, gs://bucket/dir/spec.yaml, mem://...),
// opened with storage.OpenBucket. A file named *.json must be valid JSON.
func ReadSpec(ctx context.Context, location string) (*Spec, error) {
	// Checked before it is opened (storage.ReadSmall): a regular file of at most
	// maxSpecBytes, so a FIFO or a device is refused instead of hanging the launcher.
	data, err := storage.ReadSmall(ctx, location, maxSpecBytes)
	if err != nil {
		return nil, fmt.Errorf("read %w", err)
	}
	if strings.EqualFold(path.Ext(location), ".json") && !json.Valid(data) {
		var v any
		return nil, fmt.Errorf("%s: not valid JSON: %v", location, json.Unmarshal(data, &v))
	}
	return ParseSpec(data)
}

// ParseSpec parses a sweep spec (YAML, or JSON when data is a JSON object) and checks
// it by building its points: a spec it accepts always yields valid points.
func ParseSpec(data []byte) (spec *Spec, err error) {
	defer func() { // the YAML library must not crash the launcher on odd input
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("spec: invalid YAML: %v", r)
		}
	}()
	if len(data) > maxSpecBytes {
		return nil, fmt.Errorf("spec: %d bytes is too large (max %d)", len(data), maxSpecBytes)
	}
	var compact bytes.Buffer
	if json.Valid(data) && json.Compact(&compact, data) == nil {
		data = compact.Bytes() // YAML reads JSON, but not its tab indentation
	}
	var s Spec
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var te *yaml.TypeError
	switch err := dec.Decode(&s); {
	case errors.Is(err, io.EOF):
		return nil, errors.New("spec: empty")
	case errors.As(err, &te):
		return nil, fmt.Errorf("spec: %s", strings.Join(te.Errors, "; "))
	case err != nil:
		return nil, fmt.Errorf("spec: %w", err)
	case !errors.Is(dec.Decode(new(yaml.Node)), io.EOF):
		return nil, errors.New("spec: more than one YAML document")
	}
	if err := s.checkOptionKeys(data); err != nil {
		return nil, err
	}
	if err := s.resolveAliases(); err != nil {
		return nil, err
	}
	if s.Name == "" {
		return nil, errors.New("name: missing (required: [a-z0-9-]+)")
	}
	if !nameRE.MatchString(string(s.Name)) {
		return nil, fmt.Errorf("name: invalid name %s: use 1-63 of a-z, 0-9 and '-', starting and ending with a letter or digit", echo(string(s.Name)))
	}
	if _, err := s.Points(); err != nil {
		return nil, err
	}
	return &s, nil
}

// axisOfAlias is the axis an alias of the reference implementation's names, if its
// target is an axis's flag.
func axisOfAlias(r launch.RefFlag) (schemas.AxisDef, bool) {
	i := slices.IndexFunc(schemas.AxisDefs, func(a schemas.AxisDef) bool { return a.FlagName() == r.Flag })
	if i < 0 {
		return schemas.AxisDef{}, false
	}
	return schemas.AxisDefs[i], true
}

// aliasField is the name of an alias's field in Defaults and Grid: "Ref" and the alias
// in camel case (n_steps: RefNSteps).
func aliasField(r launch.RefFlag) string {
	var b strings.Builder
	b.WriteString("Ref")
	for _, part := range strings.Split(r.Name, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// resolveAliases moves the values of the reference implementation's keys (an alias of
// launch.RefFlags, e.g. n_steps) to their axes (sgld_steps) in defaults and in grid,
// and refuses an alias given beside its axis there.
func (s *Spec) resolveAliases() error {
	for _, part := range []struct {
		name string
		v    reflect.Value
	}{{"defaults", reflect.ValueOf(&s.Defaults).Elem()}, {"grid", reflect.ValueOf(&s.Grid).Elem()}} {
		for _, r := range launch.Aliases() {
			a, ok := axisOfAlias(r)
			if !ok {
				continue
			}
			from, to := part.v.FieldByName(aliasField(r)), part.v.FieldByName(a.StructField().Name)
			if !from.IsValid() || !to.IsValid() {
				panic(fmt.Sprintf("sweep: the spec has no field %s for the alias %s: run go test ./pipelines/sweep -update_axes", aliasField(r), r.Name))
			}
			if from.IsZero() {
				continue
			}
			if !to.IsZero() {
				return fmt.Errorf("%s.%s: alias of %s, which is given too; give one of them", part.name, r.Name, a.Key())
			}
			to.Set(from)
			from.SetZero()
		}
	}
	return nil
}

// axis is one axis of the grid, in a form the odometer can use.
type axis struct {
	name string
	def  bool // set in defaults
	n    int  // values in grid (0: not a grid axis)
	// set sets the default (i < 0) or grid value i on p, and returns it in canonical form.
	set func(p *stages.Point, i int) (string, error)
}

func (a axis) used() bool { return a.def || a.n > 0 }

// where names the place of a used axis in the spec.
func (a axis) where() string {
	if a.def {
		return "defaults." + a.name
	}
	return "grid." + a.name
}

func newAxis[T any](name string, def *T, grid []T, set func(*stages.Point, T) (string, error)) axis {
	return axis{name: name, def: def != nil, n: len(grid), set: func(p *stages.Point, i int) (string, error) {
		if i < 0 {
			return set(p, *def)
		}
		return set(p, grid[i])
	}}
}

func setShape(p *stages.Point, v Str) (string, error) {
	m := shapeRE.FindStringSubmatch(strings.TrimSpace(string(v)))
	if m == nil {
		return "", fmt.Errorf("invalid shape %s: want XxK, e.g. \"4x2\" (x_values x classes)", echo(string(v)))
	}
	p.XValues, _ = strconv.Atoi(m[1])
	p.Classes, _ = strconv.Atoi(m[2])
	return fmt.Sprintf("%dx%d", p.XValues, p.Classes), nil
}

func canonGenerator(s string) (string, error) {
	g, err := prob.ParseGenerator(s)
	return g.String(), err
}

// canonTask is a task's canonical form, as its kind resolves it (its arguments are
// checked with the point, by the kind's Validate).
func canonTask(s string) (string, error) {
	if s == schemas.TaskTable {
		return s, nil
	}
	k, err := tasks.Of(s)
	if err != nil {
		if _, kerr := tasks.Of(s); kerr == nil && s != tasks.TaskFile && !slices.Contains(prob.TaskKinds2D, strings.SplitN(s, ":", 2)[0]) {
			return s, nil // another kind's task (blocks:…): its Resolve canonicalises it, its Validate checks it
		}
		return s, err
	}
	p := tasks.Point{Grid: schemas.Grid{Task: s}}
	k.Resolve(&p)
	return p.Task, nil
}

func canonModel(s string) (string, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "additive:") {
		return s, nil // the block tasks' additive model: their Resolve canonicalises it, their Validate checks it
	}
	hidden, err := models.ParseModel(s)
	if err != nil || hidden == nil {
		return "linear", err
	}
	parts := make([]string, len(hidden))
	for i, h := range hidden {
		parts[i] = strconv.Itoa(h)
	}
	return "mlp:" + strings.Join(parts, ","), nil
}

// axes lists the axes in enumeration order: shape, then schemas.AxisDefs.
func (s *Spec) axes() []axis {
	d, g := reflect.ValueOf(&s.Defaults).Elem(), reflect.ValueOf(&s.Grid).Elem()
	axes := []axis{newAxis("shape", s.Defaults.Shape, s.Grid.Shape, setShape)}
	for _, a := range schemas.AxisDefs {
		if a.IsOption() {
			axes = append(axes, s.optionAxis(a))
			continue
		}
		name := a.StructField().Name
		def, grid := d.FieldByName(name), g.FieldByName(name)
		if !def.IsValid() || !grid.IsValid() {
			panic(fmt.Sprintf("sweep: the spec has no field %s for the axis %s: run go test ./pipelines/sweep -update_axes", name, a.Key()))
		}
		axes = append(axes, axis{name: a.Key(), def: !def.IsNil(), n: grid.Len(), set: func(p *stages.Point, i int) (string, error) {
			if i < 0 {
				return setValue(p, a, def.Elem())
			}
			return setValue(p, a, grid.Index(i))
		}})
	}
	return axes
}

// canonical are the canonical forms of the string axes with more than one spelling of
// a value; the other values are taken as written.
var canonical = map[string]func(string) (string, error){
	"generator": canonGenerator,
	"model":     canonModel,
	"task":      canonTask,
}

// setValue sets the axis a of p to v, a value of a's field in Defaults or Grid (Int,
// float64, Str or bool), and returns it in canonical form.
func setValue(p *stages.Point, a schemas.AxisDef, v reflect.Value) (string, error) {
	x := v.Convert(reflect.TypeOf(a.Field.Default())).Interface()
	var err error
	if canon := canonical[a.Key()]; canon != nil {
		x, err = canon(x.(string))
	}
	a.Field.Set(&p.Grid, x)
	return fmt.Sprint(x), err
}

// NumPoints is the number of grid points (capped at MaxPoints+1).
func (s *Spec) NumPoints() int {
	n := 1
	for _, a := range s.axes() {
		n = min(n*max(a.n, 1), MaxPoints+1)
	}
	if s.Replicates != nil {
		n = min(n*max(int(*s.Replicates), 1), MaxPoints+1)
	}
	return n
}

// TotalTables is the number of tables the sweep draws.
func (s *Spec) TotalTables() int { return s.NumPoints() * int(s.Tables) }

// Points returns the grid points: the Cartesian product of the grid axes in the
// documented order (the last axis varies fastest), IDs 0..n-1, each validated.
func (s *Spec) Points() ([]stages.Point, error) {
	axes := s.axes()
	shape, replicate := axes[0], &axes[slices.IndexFunc(axes, func(a axis) bool { return a.name == "replicate" })]
	if r := s.Replicates; r != nil { // the shorthand replaces the replicate axis
		if replicate.used() {
			return nil, fmt.Errorf("replicates: conflicts with %s; use one of them", replicate.where())
		}
		if *r < 1 {
			return nil, fmt.Errorf("replicates: must be >= 1, got %d", *r)
		}
		*replicate = axis{name: "replicate", n: min(int(*r), MaxPoints+1), set: func(p *stages.Point, i int) (string, error) {
			p.Replicate = i
			return strconv.Itoa(i), nil
		}}
	}
	base := stages.Point{Grid: schemas.DefaultGrid()}
	base.Tables, base.Methods = int(s.Tables), slices.Clone(s.Methods)
	var grid []axis
	var dims []string
	n := 1
	for _, a := range axes {
		if a.def && a.n > 0 {
			return nil, fmt.Errorf("grid.%s: axis is also set in defaults.%s; give it in one place", a.name, a.name)
		}
		if (a.name == "x_values" || a.name == "classes") && a.used() && shape.used() {
			return nil, fmt.Errorf("%s: conflicts with %s; give the table shape either as shape or as x_values/classes", a.where(), shape.where())
		}
		if a.def {
			if _, err := a.set(&base, -1); err != nil {
				return nil, fmt.Errorf("defaults.%s: %w", a.name, err)
			}
		} else if a.n > 0 {
			grid, dims, n = append(grid, a), append(dims, fmt.Sprintf("%s %d", a.name, a.n)), min(n*a.n, MaxPoints+1)
		}
	}
	if n > MaxPoints {
		return nil, fmt.Errorf("grid: more than %d grid points (%s)", MaxPoints, strings.Join(dims, " × "))
	}
	// Canonical values per grid axis, which must be distinct.
	vals := make([][]string, len(grid))
	for i, a := range grid {
		var scratch stages.Point
		seen := map[string]int{}
		for j := range a.n {
			v, err := a.set(&scratch, j)
			if err != nil {
				return nil, fmt.Errorf("grid.%s[%d]: %w", a.name, j, err)
			}
			if k, dup := seen[v]; dup {
				return nil, fmt.Errorf("grid.%s[%d]: duplicate value %s (same as grid.%s[%d])", a.name, j, v, a.name, k)
			}
			seen[v], vals[i] = j, append(vals[i], v)
		}
	}
	points := make([]stages.Point, n)
	idx := make([]int, len(grid))
	for id := range points {
		p := base
		p.ID, p.Methods = int64(id), slices.Clone(base.Methods)
		desc := make([]string, len(grid))
		for i, a := range grid {
			_, _ = a.set(&p, idx[i]) // checked above
			desc[i] = a.name + "=" + vals[i][idx[i]]
		}
		if len(p.Methods) == 0 { // the default: baseline, jem and oracle, and the kind's (on 2-D tasks sgld)
			p.Methods = append([]string{methods.Baseline(), methods.Yardstick()}, methods.With(func(m methods.Method) bool { return m.Fresh })...)
		}
		p.Defaults(func(name string) bool {
			switch name {
			case "tables": // the spec's own field
				return true
			case "methods":
				return len(base.Methods) > 0
			}
			i := slices.IndexFunc(axes, func(a axis) bool { return a.name == name })
			return i >= 0 && axes[i].used()
		})
		p.Resolve()
		if err := p.Validate(); err != nil {
			if len(desc) == 0 {
				desc = []string{"the only point"}
			}
			return nil, fmt.Errorf("grid point %d (%s): %w", id, strings.Join(desc, " "), err)
		}
		points[id] = p
		for i := len(idx) - 1; i >= 0; i-- { // odometer: the last axis varies fastest
			if idx[i]++; idx[i] < len(vals[i]) {
				break
			}
			idx[i] = 0
		}
	}
	if err := tasks.CheckGrid(points); err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	return points, nil
}
