package main

// # Sweep spec format
//
// A sweep spec is a YAML file (JSON is accepted too: a .json file, or any JSON text)
// that names a grid of experiment settings. The sweep runs the Cartesian product of
// the grid's axes; every combination is one grid point, and every grid point draws
// `tables` random joint tables and trains every listed method on each of them.
//
//	name: kl-vs-n              # required: [a-z0-9-], at most 63 characters, starts and
//	                           #   ends with a letter or digit (used in job names and paths)
//	description: KL vs N       # optional free text
//	tables: 100                # required: tables per grid point, >= 1
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
// Axes (a key of defaults or of grid), in enumeration order, with built-in defaults:
//
//	shape          table shape "XxK", e.g. "4x2" (sets x_values and classes; use either
//	               shape or x_values/classes, not both)
//	x_values       |X|, integer 1..65536                       default 2
//	classes        K, integer 2..4096 (x_values*classes <= 65536) default 2
//	encoding       scalar | onehot                              default scalar
//	generator      uniform | dirichlet:ALPHA (ALPHA > 0)        default uniform
//	model          linear | mlp:H1,H2,... (1..16 layers)        default linear
//	samples        N draws per table, integer 1..10^12          default 1000
//	batch_size     integer >= 0 and <= samples; 0 = full batch default 0
//	lr             Adam learning rate, number > 0               default 0.05
//	steps          optimiser steps, integer 1..16777216         default 300
//	jem_px_weight  weight of log p(x) in jem/oracle, >= 0       default 1
//	replicate      replicate index (part of every seed), >= 0   default 0
//
// Integers may be written as integral floats (1e4); numbers must not be quoted and
// strings may be quoted or not. An axis may appear in defaults or in grid, not both,
// and `replicates` excludes a replicate axis. Values within one grid axis must be
// distinct (generators and models are compared in canonical form, so "mlp: 16" equals
// "mlp:16").
//
// Point order: grid points are enumerated row-major over the axes in the order of the
// table above, whatever order the file lists them in: the last grid axis present
// (usually replicate) varies fastest; within an axis the values keep the order of the
// list. Point IDs are 0..n-1 in that order, so a spec always yields the same IDs.
//
// Limits: at most 10,000 grid points, at most 10,000,000 tables in total (tables ×
// points) and at most 10^18 draws in total (tables × samples over the points), and
// every grid point must pass stages.Point.Validate (which also bounds the model's
// parameters); an error names the grid point's values. These are the limits of a
// distributed run (stages/limits.go); a local run is further limited before it starts
// (stages.Options.CheckLimits: e.g. 500,000 tables in total, 10^7 draws per table
// while samples are written). Parsing is strict: unknown keys, duplicate keys, values
// of the wrong type, empty grid lists and out-of-range values are errors naming the
// key (as a path, e.g. grid.lr[1]) and its line: "line 7: grid.lrr: unknown key; ...".
// YAML anchors and aliases work; merge keys (<<) and multi-document files do not.
// --spec takes a local path or a bucket URL (gs://, s3://, file://, mem://).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gocloud.dev/blob"
	"gopkg.in/yaml.v3"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/stages"
)

// Limits of a sweep (the same as the stages' limits on a distributed run).
const (
	MaxPoints      = stages.MaxPoints // grid points per sweep
	MaxTotalTables = stages.MaxTables // tables × points
	maxSpecBytes   = 1 << 20
	maxEcho        = 80 // characters of a rejected value echoed in a message
)

// Spec is a parsed, validated and canonicalised sweep spec. Its JSON encoding is
// itself a valid spec that yields the same points (config.json records it).
type Spec struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tables      int      `json:"tables"`
	Methods     []string `json:"methods"`
	// Defaults holds the value of every axis that is not a grid axis: the spec's
	// defaults plus the built-in ones. Values are int, float64 or string.
	Defaults map[string]any `json:"defaults,omitempty"`
	// Grid holds the values of every grid axis, in list order; the replicates
	// shorthand is expanded into a replicate axis.
	Grid map[string][]any `json:"grid,omitempty"`
}

type axisKind int

const (
	kindInt axisKind = iota
	kindFloat
	kindString
)

// axisDef describes one axis. check validates a value of the axis's kind and returns
// its canonical form; its error does not name the key (the caller adds the path).
type axisDef struct {
	name  string
	kind  axisKind
	check func(v any) (any, error)
	apply func(p *stages.Point, v any)
}

// axes in enumeration order (the last grid axis varies fastest).
var axes = []axisDef{
	{"shape", kindString, checkShape, func(p *stages.Point, v any) {
		p.XValues, p.Classes, _ = splitShape(v.(string))
	}},
	{"x_values", kindInt, intRange(1, 1<<16), func(p *stages.Point, v any) { p.XValues = v.(int) }},
	{"classes", kindInt, intRange(2, 1<<12), func(p *stages.Point, v any) { p.Classes = v.(int) }},
	{"encoding", kindString, checkEncoding, func(p *stages.Point, v any) { p.Encoding = v.(string) }},
	{"generator", kindString, checkGenerator, func(p *stages.Point, v any) { p.Generator = v.(string) }},
	{"model", kindString, checkModel, func(p *stages.Point, v any) { p.Model = v.(string) }},
	{"samples", kindInt, intRange(1, stages.MaxSamples), func(p *stages.Point, v any) { p.Samples = v.(int) }},
	{"batch_size", kindInt, intRange(0, stages.MaxSamples), func(p *stages.Point, v any) { p.BatchSize = v.(int) }},
	{"lr", kindFloat, floatCheck(false), func(p *stages.Point, v any) { p.LR = v.(float64) }},
	{"steps", kindInt, intRange(1, stages.MaxSteps), func(p *stages.Point, v any) { p.Steps = v.(int) }},
	{"jem_px_weight", kindFloat, floatCheck(true), func(p *stages.Point, v any) { p.PxWeight = v.(float64) }},
	{"replicate", kindInt, intRange(0, math.MaxInt32), func(p *stages.Point, v any) { p.Replicate = v.(int) }},
}

// builtinDefaults are the values of axes the spec leaves out (shape excepted: it
// stands for x_values and classes).
var builtinDefaults = map[string]any{
	"x_values": 2, "classes": 2, "encoding": "scalar", "generator": "uniform",
	"samples": 1000, "model": "linear", "lr": 0.05, "steps": 300, "batch_size": 0,
	"replicate": 0, "jem_px_weight": 1.0,
}

var topKeys = []string{"name", "description", "tables", "methods", "replicates", "defaults", "grid"}

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func axisByName(name string) (axisDef, bool) {
	for _, a := range axes {
		if a.name == name {
			return a, true
		}
	}
	return axisDef{}, false
}

func axisNames() string {
	names := make([]string, len(axes))
	for i, a := range axes {
		names[i] = a.name
	}
	return strings.Join(names, ", ")
}

// ReadSpec reads and parses the spec at location: a local path or a gocloud.dev
// blob URL (gs://bucket/dir/spec.yaml, s3://..., file:///abs/spec.yaml, mem://...).
// The blob driver for the URL's scheme must be linked into the binary. A file
// named *.json must be valid JSON.
func ReadSpec(ctx context.Context, location string) (*Spec, error) {
	data, err := readLocation(ctx, location)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(path.Ext(location), ".json") && !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, fmt.Errorf("%s: not valid JSON: %v", location, err)
	}
	return ParseSpec(data)
}

func readLocation(ctx context.Context, location string) ([]byte, error) {
	u, err := url.Parse(location)
	if err != nil || u.Scheme == "" || len(u.Scheme) == 1 { // plain path (or a Windows drive letter)
		return readLocal(location)
	}
	if u.Scheme == "file" {
		return readLocal(u.Path)
	}
	dir, key := path.Split(strings.TrimPrefix(u.Path, "/"))
	if key == "" {
		return nil, fmt.Errorf("%s: no file name in the URL", location)
	}
	q := u.Query()
	if dir != "" {
		q.Set("prefix", dir)
	}
	bu := url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: q.Encode()}
	b, err := blob.OpenBucket(ctx, bu.String())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", location, err)
	}
	defer b.Close()
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", location, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", location, err)
	}
	return data, nil
}

func readLocal(p string) ([]byte, error) {
	f, err := os.Open(filepath.Clean(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSpecBytes+1))
}

// specError is a parse error at a key path and (when known) a line.
type specError struct {
	path string
	line int
	msg  string
}

func (e *specError) Error() string {
	p := e.path
	if p == "" {
		p = "spec"
	}
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.line, p, e.msg)
	}
	return fmt.Sprintf("%s: %s", p, e.msg)
}

// parser walks the YAML node tree.
type parser struct {
	lines bool // report line numbers (false when the text was re-encoded JSON)
}

func (ps *parser) errf(n *yaml.Node, path, format string, args ...any) error {
	e := &specError{path: path, msg: fmt.Sprintf(format, args...)}
	if ps.lines && n != nil {
		e.line = n.Line
	}
	return e
}

// ParseSpec parses and validates a sweep spec (YAML or JSON). A spec it accepts
// always yields valid points.
func ParseSpec(data []byte) (spec *Spec, err error) {
	defer func() { // the YAML library must not crash the launcher on odd input
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("spec: invalid YAML: %v", r)
		}
	}()
	if len(data) > maxSpecBytes {
		return nil, fmt.Errorf("spec: %d bytes is too large (max %d)", len(data), maxSpecBytes)
	}
	ps := &parser{lines: true}
	root, err := ps.document(data)
	if err != nil {
		return nil, err
	}
	s, err := ps.spec(root)
	if err != nil {
		return nil, err
	}
	if _, err := s.Points(); err != nil {
		return nil, err
	}
	return s, nil
}

// document decodes the single YAML document in data. JSON that YAML cannot read
// (tab indentation) is compacted first.
func (ps *parser) document(data []byte) (*yaml.Node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("spec: empty")
	}
	root, err := decodeSingle(data)
	if err != nil && json.Valid(data) {
		var buf bytes.Buffer
		if json.Compact(&buf, data) == nil {
			if r, err2 := decodeSingle(buf.Bytes()); err2 == nil {
				ps.lines = false
				return r, nil
			}
		}
	}
	return root, err
}

func decodeSingle(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("spec: empty (only comments)")
		}
		return nil, fmt.Errorf("spec: invalid YAML: %v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, fmt.Errorf("spec: invalid YAML: %v", err)
		}
		return nil, fmt.Errorf("spec: more than one YAML document (second one at line %d)", extra.Line)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("spec: empty")
	}
	return doc.Content[0], nil
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n == nil || n.Kind == yaml.AliasNode {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return n
}

// describe names a node's type and value for error messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!str":
			return fmt.Sprintf("string %q", v)
		case "!!int", "!!float":
			return "number " + v
		case "!!bool":
			return "boolean " + v
		default:
			return fmt.Sprintf("%s %q", n.ShortTag(), v)
		}
	}
	return "an unsupported YAML node"
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

type entry struct {
	key        string
	keyN, valN *yaml.Node
}

// mapping returns the entries of a mapping node, rejecting duplicate and
// non-scalar keys. A null node is an empty mapping when nullOK.
func (ps *parser) mapping(n *yaml.Node, path string, nullOK bool) ([]entry, error) {
	n = resolve(n)
	if nullOK && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, ps.errf(n, path, "expected a mapping, got %s", describe(n))
	}
	var out []entry
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			return nil, ps.errf(k, path, "keys must be plain names, got %s", describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return nil, ps.errf(k, join(path, k.Value), "duplicate key (first at line %d)", first)
		}
		seen[k.Value] = k.Line
		out = append(out, entry{k.Value, k, n.Content[i+1]})
	}
	return out, nil
}

func (ps *parser) str(n *yaml.Node, path string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", ps.errf(n, path, "expected a string, got %s", describe(n))
	}
	return n.Value, nil
}

func (ps *parser) integer(n *yaml.Node, path string) (int, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int":
			var v int64
			if err := n.Decode(&v); err != nil {
				return 0, ps.errf(n, path, "expected an integer, got %s (out of range)", describe(n))
			}
			return int(v), nil
		case "!!float":
			var f float64
			if err := n.Decode(&f); err == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
				return int(f), nil
			}
			return 0, ps.errf(n, path, "expected an integer, got %s", describe(n))
		}
	}
	return 0, ps.errf(n, path, "expected an integer, got %s", describe(n))
}

func (ps *parser) number(n *yaml.Node, path string) (float64, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		var f float64
		if err := n.Decode(&f); err == nil {
			return f, nil
		}
	}
	return 0, ps.errf(n, path, "expected a number, got %s", describe(n))
}

// value parses one axis value: type, range and canonical form.
func (ps *parser) value(a axisDef, n *yaml.Node, path string) (any, error) {
	var v any
	var err error
	switch a.kind {
	case kindInt:
		v, err = ps.integer(n, path)
	case kindFloat:
		v, err = ps.number(n, path)
	default:
		v, err = ps.str(n, path)
	}
	if err != nil {
		return nil, err
	}
	c, err := a.check(v)
	if err != nil {
		return nil, ps.errf(resolve(n), path, "%v", err)
	}
	return c, nil
}

func (ps *parser) spec(root *yaml.Node) (*Spec, error) {
	entries, err := ps.mapping(root, "", false)
	if err != nil {
		return nil, err
	}
	s := &Spec{Methods: slices.Clone(stages.AllMethods), Defaults: map[string]any{}, Grid: map[string][]any{}}
	var got = map[string]entry{}
	for _, e := range entries {
		if !slices.Contains(topKeys, e.key) {
			return nil, ps.errf(e.keyN, e.key, "unknown key; known keys: %s", strings.Join(topKeys, ", "))
		}
		got[e.key] = e
	}
	// name
	e, ok := got["name"]
	if !ok {
		return nil, ps.errf(root, "name", "missing (required: [a-z0-9-]+)")
	}
	if s.Name, err = ps.str(e.valN, "name"); err != nil {
		return nil, err
	}
	if !nameRE.MatchString(s.Name) {
		return nil, ps.errf(resolve(e.valN), "name", "invalid name %s: use 1-63 of a-z, 0-9 and '-', starting and ending with a letter or digit", echo(s.Name))
	}
	if e, ok := got["description"]; ok {
		if s.Description, err = ps.str(e.valN, "description"); err != nil {
			return nil, err
		}
	}
	// tables
	e, ok = got["tables"]
	if !ok {
		return nil, ps.errf(root, "tables", "missing (required: tables per grid point, >= 1)")
	}
	if s.Tables, err = ps.integer(e.valN, "tables"); err != nil {
		return nil, err
	}
	if s.Tables < 1 || s.Tables > MaxTotalTables {
		return nil, ps.errf(resolve(e.valN), "tables", "must be in [1, %d], got %d", MaxTotalTables, s.Tables)
	}
	// methods
	if e, ok := got["methods"]; ok {
		if s.Methods, err = ps.methods(e.valN); err != nil {
			return nil, err
		}
	}
	where := map[string]string{} // axis -> "defaults.x" / "grid.x" / "replicates", for conflict messages
	lines := map[string]*yaml.Node{}
	// defaults
	if e, ok := got["defaults"]; ok {
		des, err := ps.mapping(e.valN, "defaults", true)
		if err != nil {
			return nil, err
		}
		for _, d := range des {
			p := "defaults." + d.key
			a, ok := axisByName(d.key)
			if !ok {
				return nil, ps.errf(d.keyN, p, "unknown key; known axes: %s", axisNames())
			}
			if vn := resolve(d.valN); vn.Kind == yaml.SequenceNode {
				return nil, ps.errf(vn, p, "expected a single value, got a list (axes with several values go under grid)")
			}
			if s.Defaults[d.key], err = ps.value(a, d.valN, p); err != nil {
				return nil, err
			}
			where[d.key], lines[d.key] = p, d.keyN
		}
	}
	// grid
	if e, ok := got["grid"]; ok {
		ges, err := ps.mapping(e.valN, "grid", true)
		if err != nil {
			return nil, err
		}
		for _, g := range ges {
			p := "grid." + g.key
			a, ok := axisByName(g.key)
			if !ok {
				hint := ""
				if g.key == "replicates" {
					hint = " (replicates: N is a top-level key; the grid axis is replicate)"
				}
				return nil, ps.errf(g.keyN, p, "unknown key%s; known axes: %s", hint, axisNames())
			}
			if w, dup := where[g.key]; dup {
				return nil, ps.errf(g.keyN, p, "axis is also set in %s; give it in one place", w)
			}
			vals, err := ps.list(a, g.valN, p)
			if err != nil {
				return nil, err
			}
			s.Grid[g.key] = vals
			where[g.key], lines[g.key] = p, g.keyN
		}
	}
	// replicates shorthand
	if e, ok := got["replicates"]; ok {
		n, err := ps.integer(e.valN, "replicates")
		if err != nil {
			return nil, err
		}
		if n < 1 || n > MaxPoints {
			return nil, ps.errf(resolve(e.valN), "replicates", "must be in [1, %d], got %d", MaxPoints, n)
		}
		if w, dup := where["replicate"]; dup {
			return nil, ps.errf(e.keyN, "replicates", "conflicts with %s; use one of them", w)
		}
		vals := make([]any, n)
		for i := range vals {
			vals[i] = i
		}
		s.Grid["replicate"] = vals
		where["replicate"] = "replicates"
	}
	// shape excludes x_values and classes
	if w, ok := where["shape"]; ok {
		for _, other := range []string{"x_values", "classes"} {
			if w2, dup := where[other]; dup {
				return nil, ps.errf(lines[other], w2, "conflicts with %s; give the table shape either as shape or as x_values/classes", w)
			}
		}
	}
	// built-in defaults for everything left
	for k, v := range builtinDefaults {
		if _, set := where[k]; set {
			continue
		}
		if _, shape := where["shape"]; shape && (k == "x_values" || k == "classes") {
			continue
		}
		s.Defaults[k] = v
	}
	if len(s.Grid) == 0 {
		s.Grid = nil
	}
	return s, s.checkSize()
}

func (ps *parser) methods(n *yaml.Node) ([]string, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		ms, err := stages.ParseMethods(n.Value)
		if err != nil {
			return nil, ps.errf(n, "methods", "%v", err)
		}
		return ms, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, ps.errf(n, "methods", "expected a list of methods (%s), got %s", strings.Join(stages.AllMethods, ", "), describe(n))
	}
	if len(n.Content) == 0 {
		return nil, ps.errf(n, "methods", "empty list; give at least one of %s", strings.Join(stages.AllMethods, ", "))
	}
	var out []string
	for i, c := range n.Content {
		p := fmt.Sprintf("methods[%d]", i)
		m, err := ps.str(c, p)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(stages.AllMethods, m) {
			return nil, ps.errf(resolve(c), p, "unknown method %s (known: %s)", echo(m), strings.Join(stages.AllMethods, ", "))
		}
		if slices.Contains(out, m) {
			return nil, ps.errf(resolve(c), p, "method %s listed twice", echo(m))
		}
		out = append(out, m)
	}
	return out, nil
}

// list parses a grid axis: a non-empty list of distinct values.
func (ps *parser) list(a axisDef, n *yaml.Node, path string) ([]any, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, ps.errf(n, path, "expected a non-empty list of values, got %s (a single fixed value goes under defaults)", describe(n))
	}
	if len(n.Content) == 0 {
		return nil, ps.errf(n, path, "empty list; a grid axis needs at least one value")
	}
	if len(n.Content) > MaxPoints {
		return nil, ps.errf(n, path, "%d values exceed the limit of %d grid points", len(n.Content), MaxPoints)
	}
	vals := make([]any, 0, len(n.Content))
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		v, err := ps.value(a, c, p)
		if err != nil {
			return nil, err
		}
		if j := slices.Index(vals, v); j >= 0 {
			return nil, ps.errf(resolve(c), p, "duplicate value %v (same as %s[%d])", v, path, j)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// gridAxes are the spec's grid axes in enumeration order.
func (s *Spec) gridAxes() []axisDef {
	var out []axisDef
	for _, a := range axes {
		if _, ok := s.Grid[a.name]; ok {
			out = append(out, a)
		}
	}
	return out
}

// NumPoints is the number of grid points (capped at MaxPoints+1 on overflow).
func (s *Spec) NumPoints() int {
	n := 1
	for _, vs := range s.Grid {
		n *= len(vs)
		if n > MaxPoints {
			return MaxPoints + 1
		}
	}
	return n
}

// TotalTables is the number of tables the sweep draws.
func (s *Spec) TotalTables() int { return s.NumPoints() * s.Tables }

func (s *Spec) checkSize() error {
	var dims []string
	for _, a := range s.gridAxes() {
		dims = append(dims, fmt.Sprintf("%s %d", a.name, len(s.Grid[a.name])))
	}
	n := s.NumPoints()
	if n > MaxPoints {
		return &specError{path: "grid", msg: fmt.Sprintf("more than %d grid points (%s)", MaxPoints, strings.Join(dims, " × "))}
	}
	if s.Tables > MaxTotalTables/n {
		return &specError{path: "tables", msg: fmt.Sprintf("%d tables × %d grid points = %d tables exceed the limit of %d",
			s.Tables, n, s.Tables*n, MaxTotalTables)}
	}
	return nil
}

// Points returns the grid points: the Cartesian product of the grid axes in the
// documented order (the last axis varies fastest), IDs 0..n-1, each validated.
func (s *Spec) Points() ([]stages.Point, error) {
	for k := range s.Grid {
		if _, ok := axisByName(k); !ok {
			return nil, fmt.Errorf("grid.%s: unknown axis; known axes: %s", k, axisNames())
		}
		if len(s.Grid[k]) == 0 {
			return nil, fmt.Errorf("grid.%s: empty list", k)
		}
	}
	if err := s.checkSize(); err != nil {
		return nil, err
	}
	if s.Tables < 1 {
		return nil, fmt.Errorf("tables: must be >= 1, got %d", s.Tables)
	}
	base := stages.Point{Tables: s.Tables}
	for _, a := range axes { // fixed order, so shape is applied before x_values/classes
		v, ok := s.Defaults[a.name]
		if !ok {
			continue
		}
		if _, grid := s.Grid[a.name]; grid {
			return nil, fmt.Errorf("defaults.%s: axis is also a grid axis", a.name)
		}
		c, err := canonical(a, v)
		if err != nil {
			return nil, fmt.Errorf("defaults.%s: %v", a.name, err)
		}
		a.apply(&base, c)
	}
	for k := range s.Defaults {
		if _, ok := axisByName(k); !ok {
			return nil, fmt.Errorf("defaults.%s: unknown axis; known axes: %s", k, axisNames())
		}
	}
	grid := s.gridAxes()
	vals := make([][]any, len(grid))
	for i, a := range grid {
		vals[i] = make([]any, len(s.Grid[a.name]))
		for j, v := range s.Grid[a.name] {
			c, err := canonical(a, v)
			if err != nil {
				return nil, fmt.Errorf("grid.%s[%d]: %v", a.name, j, err)
			}
			vals[i][j] = c
		}
	}
	n := s.NumPoints()
	points := make([]stages.Point, 0, n)
	idx := make([]int, len(grid))
	for id := 0; id < n; id++ {
		p := base
		p.ID = int64(id)
		p.Methods = slices.Clone(s.Methods)
		for i, a := range grid {
			a.apply(&p, vals[i][idx[i]])
		}
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("grid point %d (%s): %w", id, describePoint(grid, vals, idx), err)
		}
		points = append(points, p)
		for i := len(idx) - 1; i >= 0; i-- { // odometer: the last axis varies fastest
			idx[i]++
			if idx[i] < len(vals[i]) {
				break
			}
			idx[i] = 0
		}
	}
	if err := stages.CheckGrid(points); err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	return points, nil
}

// echo quotes a user's value for a message, cut to maxEcho characters.
func echo(s string) string {
	if r := []rune(s); len(r) > maxEcho {
		return fmt.Sprintf("%q... (%d characters)", string(r[:maxEcho]), len(r))
	}
	return fmt.Sprintf("%q", s)
}

func describePoint(grid []axisDef, vals [][]any, idx []int) string {
	if len(grid) == 0 {
		return "the only point"
	}
	parts := make([]string, len(grid))
	for i, a := range grid {
		parts[i] = fmt.Sprintf("%s=%v", a.name, vals[i][idx[i]])
	}
	return strings.Join(parts, " ")
}

// canonical converts a Go value (as the parser or a JSON decoder produces it) to the
// axis's kind and checks it.
func canonical(a axisDef, v any) (any, error) {
	switch a.kind {
	case kindInt:
		switch x := v.(type) {
		case int:
		case int64:
			v = int(x)
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return nil, fmt.Errorf("expected an integer, got %v", x)
			}
			v = int(x)
		default:
			return nil, fmt.Errorf("expected an integer, got %T %v", v, v)
		}
	case kindFloat:
		switch x := v.(type) {
		case float64:
		case int:
			v = float64(x)
		case int64:
			v = float64(x)
		default:
			return nil, fmt.Errorf("expected a number, got %T %v", v, v)
		}
	default:
		if _, ok := v.(string); !ok {
			return nil, fmt.Errorf("expected a string, got %T %v", v, v)
		}
	}
	return a.check(v)
}

func intRange(lo, hi int) func(any) (any, error) {
	return func(v any) (any, error) {
		n := v.(int)
		if n < lo || n > hi {
			if hi == math.MaxInt64 {
				return nil, fmt.Errorf("must be >= %d, got %d", lo, n)
			}
			return nil, fmt.Errorf("must be in [%d, %d], got %d", lo, hi, n)
		}
		return n, nil
	}
}

func floatCheck(zeroOK bool) func(any) (any, error) {
	return func(v any) (any, error) {
		f := v.(float64)
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return nil, fmt.Errorf("must be a finite number, got %v", f)
		case zeroOK && f < 0:
			return nil, fmt.Errorf("must be >= 0, got %v", f)
		case !zeroOK && f <= 0:
			return nil, fmt.Errorf("must be > 0, got %v", f)
		}
		return f, nil
	}
}

var shapeRE = regexp.MustCompile(`^([0-9]{1,6})x([0-9]{1,6})$`)

func splitShape(s string) (x, k int, ok bool) {
	m := shapeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, 0, false
	}
	x, _ = strconv.Atoi(m[1])
	k, _ = strconv.Atoi(m[2])
	return x, k, true
}

func checkShape(v any) (any, error) {
	x, k, ok := splitShape(v.(string))
	switch {
	case !ok:
		return nil, fmt.Errorf("invalid shape %s: want XxK, e.g. \"4x2\" (x_values x classes)", echo(v.(string)))
	case x < 1 || x > 1<<16:
		return nil, fmt.Errorf("shape %q: x_values must be in [1, 65536], got %d", v, x)
	case k < 2 || k > 1<<12:
		return nil, fmt.Errorf("shape %q: classes must be in [2, 4096], got %d", v, k)
	case x*k > 1<<16:
		return nil, fmt.Errorf("shape %q: %d cells is too many (max 65536)", v, x*k)
	}
	return fmt.Sprintf("%dx%d", x, k), nil
}

func checkEncoding(v any) (any, error) {
	s := v.(string)
	if !slices.Contains(stages.Encodings, s) {
		return nil, fmt.Errorf("unknown encoding %s (known: %s)", echo(s), strings.Join(stages.Encodings, ", "))
	}
	return s, nil
}

func checkGenerator(v any) (any, error) {
	g, err := prob.ParseGenerator(v.(string))
	if err != nil {
		return nil, err
	}
	return g.String(), nil
}

func checkModel(v any) (any, error) {
	hidden, err := models.ParseModel(v.(string))
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "models: "))
	}
	if hidden == nil {
		return "linear", nil
	}
	parts := make([]string, len(hidden))
	for i, h := range hidden {
		parts[i] = strconv.Itoa(h)
	}
	return "mlp:" + strings.Join(parts, ","), nil
}
