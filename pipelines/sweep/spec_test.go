package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// exampleSpecs are the sweeps/ specs (the README's examples).
func exampleSpecs(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../../sweeps/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

func mustParse(t *testing.T, text string) *Spec {
	t.Helper()
	s, err := ParseSpec([]byte(text))
	if err != nil {
		t.Fatalf("ParseSpec: %v\n%s", err, text)
	}
	return s
}

func mustPoints(t *testing.T, s *Spec) []stages.Point {
	t.Helper()
	ps, err := s.Points()
	if err != nil {
		t.Fatalf("Points: %v", err)
	}
	return ps
}

func TestExampleSpecsParse(t *testing.T) {
	specs := exampleSpecs(t)
	for _, want := range []string{"kl-vs-n", "lr-steps", "shapes-mlp", "smoke"} {
		if _, ok := specs["../../sweeps/"+want+".yaml"]; !ok {
			t.Errorf("sweeps/%s.yaml is missing", want)
		}
	}
	for f, b := range specs {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := ReadSpec(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.TrimSuffix(filepath.Base(f), ".yaml"); string(s.Name) != want {
				t.Errorf("name %q, want the file name %q", s.Name, want)
			}
			ps := mustPoints(t, s)
			if len(ps) != s.NumPoints() || len(ps) == 0 {
				t.Errorf("%d points, NumPoints %d", len(ps), s.NumPoints())
			}
			s2, err := ParseSpec(b)
			if err != nil || !reflect.DeepEqual(s, s2) {
				t.Errorf("ReadSpec and ParseSpec disagree: %v", err)
			}
			t.Logf("%s: %d points, %d tables", s.Name, len(ps), s.TotalTables())
		})
	}
}

func TestExampleSpecContents(t *testing.T) {
	b, _ := os.ReadFile("../../sweeps/kl-vs-n.yaml")
	s := mustParse(t, string(b))
	var ns []int
	for _, p := range mustPoints(t, s) {
		ns = append(ns, p.Samples)
		if p.XValues != 2 || p.Classes != 2 || p.Tables != 100 || len(p.Methods) != 3 {
			t.Errorf("point %+v", p)
		}
	}
	if ns[0] != 30 || ns[len(ns)-1] != 100000 {
		t.Errorf("kl-vs-n samples %v, want 30..100000", ns)
	}
	b, _ = os.ReadFile("../../sweeps/shapes-mlp.yaml")
	maxX, maxK := 0, 0
	for _, p := range mustPoints(t, mustParse(t, string(b))) {
		maxX, maxK = max(maxX, p.XValues), max(maxK, p.Classes)
		if p.Encoding != "onehot" || !strings.HasPrefix(p.Model, "mlp:") {
			t.Errorf("shapes-mlp point %+v", p)
		}
	}
	if maxX != 8 || maxK != 4 {
		t.Errorf("shapes-mlp largest shape %dx%d, want 8x4", maxX, maxK)
	}
	b, _ = os.ReadFile("../../sweeps/smoke.yaml")
	s = mustParse(t, string(b))
	if s.TotalTables() > 40 || *s.Defaults.Steps > 200 {
		t.Errorf("smoke spec is not small: %d tables, steps %v", s.TotalTables(), *s.Defaults.Steps)
	}
}

func TestBuiltinDefaults(t *testing.T) {
	ps := mustPoints(t, mustParse(t, "name: d\ntables: 7\n"))
	want := stages.Point{ID: 0, Grid: schemas.Grid{XValues: 2, Classes: 2, Encoding: "scalar", Generator: "uniform", Samples: 1000, Model: "linear", LR: 0.05, Steps: 300, BatchSize: 0, Replicate: 0, PxWeight: 1, Task: "table"}, Tables: 7, Methods: []string{"baseline", "jem", "oracle"}}
	if len(ps) != 1 || !reflect.DeepEqual(ps[0], want) {
		t.Fatalf("got %+v\nwant %+v", ps, want)
	}
}

func TestPointOrder(t *testing.T) {
	// Keys in a different order than the enumeration order: lr is listed first but
	// varies faster than samples; replicate (from the shorthand) is fastest.
	t.Run("ids", func(t *testing.T) {
		s := mustParse(t, "name: order\ntables: 2\nmethods: [jem]\nreplicates: 2\ngrid:\n  lr: [0.1, 0.01]\n  samples: [10, 100]\n  shape: [2x2, 3x2]\n")
		ps := mustPoints(t, s)
		if len(ps) != 16 {
			t.Fatalf("%d points, want 16", len(ps))
		}
		var got []string
		for i, p := range ps {
			if p.ID != int64(i) {
				t.Errorf("point %d has ID %d", i, p.ID)
			}
			got = append(got, fmt.Sprintf("%dx%d/%d/%g/%d", p.XValues, p.Classes, p.Samples, p.LR, p.Replicate))
		}
		want := []string{
			"2x2/10/0.1/0", "2x2/10/0.1/1", "2x2/10/0.01/0", "2x2/10/0.01/1",
			"2x2/100/0.1/0", "2x2/100/0.1/1", "2x2/100/0.01/0", "2x2/100/0.01/1",
			"3x2/10/0.1/0", "3x2/10/0.1/1", "3x2/10/0.01/0", "3x2/10/0.01/1",
			"3x2/100/0.1/0", "3x2/100/0.1/1", "3x2/100/0.01/0", "3x2/100/0.01/1",
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("order\n got %v\nwant %v", got, want)
		}
		again := mustPoints(t, s)
		if !reflect.DeepEqual(ps, again) {
			t.Error("Points is not deterministic")
		}
	})
}

func TestShorthandsAndCanonicalForms(t *testing.T) {
	s := mustParse(t, `
name: canon
tables: 1
methods: "oracle, jem"
defaults:
  x_values: 3
  model: "mlp: 8 ,4"
  samples: 1e4
  jem_px_weight: 0
grid:
  generator: [uniform, "dirichlet:0.50", dirichlet:2]
  batch_size: [0, 100]
`)
	ps := mustPoints(t, s)
	if len(ps) != 6 {
		t.Fatalf("%d points", len(ps))
	}
	p := ps[3]
	if p.XValues != 3 || p.Classes != 2 || p.Model != "mlp:8,4" || p.Samples != 10000 || p.PxWeight != 0 ||
		p.Generator != "dirichlet:0.5" || p.BatchSize != 100 || !reflect.DeepEqual(p.Methods, []string{"oracle", "jem"}) {
		t.Errorf("point 3 = %+v", p)
	}
	var gens []string
	for _, p := range ps[:6:6] {
		if p.BatchSize == 0 {
			gens = append(gens, p.Generator)
		}
	}
	if !reflect.DeepEqual(gens, []string{"uniform", "dirichlet:0.5", "dirichlet:2"}) {
		t.Errorf("canonical generators %v", gens)
	}
}

func TestAnchorsAndAliases(t *testing.T) {
	s := mustParse(t, "name: a\ntables: &n 4\ndefaults:\n  steps: *n\ngrid:\n  samples: &ns [10, 20]\n  batch_size: [0, 10]\n")
	if ps := mustPoints(t, s); len(ps) != 4 || ps[0].Steps != 4 {
		t.Errorf("points %+v", ps)
	}
	// Merge keys work too (yaml.v3 applies them; the merged keys are checked as usual).
	s = mustParse(t, "name: m\ntables: 1\ngrid:\n  <<: {lr: [0.1, 0.2]}\n  steps: [5]\n")
	if ps := mustPoints(t, s); len(ps) != 2 || ps[1].LR != 0.2 || ps[1].Steps != 5 {
		t.Errorf("merge key: points %+v", ps)
	}
}

func TestJSONSpecs(t *testing.T) {
	// A tab-indented JSON file (YAML forbids tabs as indentation).
	s, err := ReadSpec(context.Background(), "testdata/tabs.json")
	if err != nil {
		t.Fatal(err)
	}
	ps := mustPoints(t, s)
	if len(ps) != 4 || ps[2].Generator != "dirichlet:0.5" || ps[1].Samples != 100 || ps[0].Model != "mlp:4" {
		t.Errorf("points %+v", ps)
	}
	// Invalid JSON in a .json file is reported as JSON.
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("name: x\ntables: 1\n"), 0o644)
	if _, err := ReadSpec(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("ReadSpec(yaml in .json) = %v", err)
	}
	if _, err := ReadSpec(context.Background(), "file://"+mustAbs(t, "testdata/tabs.json")); err != nil {
		t.Errorf("file:// URL: %v", err)
	}
	if _, err := ReadSpec(context.Background(), "file://./testdata/tabs.json"); err != nil {
		t.Errorf("relative file:// URL: %v", err)
	}
	// mem:// buckets are shared within the process (storage.OpenBucket), as for --out.
	b, err := storage.OpenBucket(context.Background(), "mem://specs/sweeps")
	if err != nil {
		t.Fatal(err)
	}
	smoke, _ := os.ReadFile("../../sweeps/smoke.yaml")
	if err := b.WriteAll(context.Background(), "smoke.yaml", smoke, nil); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if s, err := ReadSpec(context.Background(), "mem://specs/sweeps/smoke.yaml"); err != nil || s.Name != "smoke" {
		t.Errorf("mem:// URL: %v", err)
	}
	if _, err := ReadSpec(context.Background(), filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
	// Bucket URLs go through gocloud.dev/blob (mem:// is registered by the launch package).
	if _, err := ReadSpec(context.Background(), "mem://bucket/sweeps/none.yaml"); err == nil ||
		!strings.Contains(err.Error(), "read mem://bucket/sweeps/none.yaml") {
		t.Errorf("mem:// URL: %v", err)
	}
	if _, err := ReadSpec(context.Background(), "gs://bucket/"); err == nil || !strings.Contains(err.Error(), "no file name") {
		t.Errorf("URL without a file name: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestJSONRoundTrip: a Spec's JSON encoding (as written to config.json) is a spec
// that yields the same points.
func TestJSONRoundTrip(t *testing.T) {
	for f, b := range exampleSpecs(t) {
		s, err := ParseSpec(b)
		if err != nil {
			t.Fatal(err)
		}
		checkRoundTrip(t, f, s)
	}
}

func checkRoundTrip(t testing.TB, name string, s *Spec) {
	t.Helper()
	j, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("%s: marshal: %v", name, err)
	}
	s2, err := ParseSpec(j)
	if err != nil {
		t.Fatalf("%s: re-parse of %s: %v", name, j, err)
	}
	p1, _ := s.Points()
	p2, err := s2.Points()
	if err != nil || !reflect.DeepEqual(p1, p2) {
		t.Fatalf("%s: round trip changed the points (%v)\n%s", name, err, j)
	}
}

func TestErrors(t *testing.T) {
	const head = "name: e\ntables: 2\n"
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%d,", i+1)
		}
		return strings.TrimSuffix(b.String(), ",")
	}
	cases := []struct {
		name, spec string
		want       []string // substrings of the error
	}{
		{"empty", "", []string{"empty"}},
		{"comments only", "# nothing\n", []string{"empty"}},
		{"not a mapping", "[1, 2]\n", []string{"line 1: cannot unmarshal !!seq into main.Spec"}},
		{"syntax", "name: [x\n", []string{"spec: yaml: line 1: did not find expected"}},
		{"two documents", head + "---\nname: f\n", []string{"more than one YAML document"}},
		{"unknown top key", head + "tabels: 3\n", []string{"spec: line 3: field tabels not found in type main.Spec"}},
		{"unknown grid key", head + "grid:\n  lrr: [0.1]\n", []string{"spec: line 4: field lrr not found in type main.Grid"}},
		{"unknown default key", head + "defaults:\n  stepz: 3\n", []string{"line 4: field stepz not found in type main.Defaults"}},
		{"replicates in grid", head + "grid:\n  replicates: [1]\n", []string{"line 4: field replicates not found in type main.Grid"}},
		{"duplicate key", head + "grid:\n  lr: [0.1]\n  lr: [0.2]\n", []string{`line 5: mapping key "lr" already defined at line 4`}},
		{"missing name", "tables: 2\n", []string{"name: missing"}},
		{"bad name", "name: Kl_vs_N\ntables: 2\n", []string{"name: invalid name", "Kl_vs_N"}},
		{"name not string", "name: [a]\ntables: 2\n", []string{"line 1: cannot unmarshal !!seq into a string"}},
		{"missing tables", "name: e\n", []string{"grid point 0 (the only point): tables must be >= 1, got 0"}},
		{"tables zero", "name: e\ntables: 0\n", []string{"tables must be >= 1, got 0"}},
		{"tables string", "name: e\ntables: \"5\"\n", []string{`line 2: cannot unmarshal !!str "5" into an integer`}},
		{"tables float", "name: e\ntables: 2.5\n", []string{`line 2: cannot unmarshal !!float "2.5" into an integer`}},
		{"description type", head + "description: 3\n", []string{`line 3: cannot unmarshal !!int "3" into a string`}},
		{"methods unknown", head + "methods: [baseline, jemm]\n", []string{"line 3: methods:", `unknown method "jemm"`}},
		{"methods twice", head + "methods: [jem, jem]\n", []string{"line 3: methods:", `method "jem" listed twice`}},
		{"methods empty", head + "methods: []\n", []string{"line 3: methods: no methods given"}},
		{"methods string unknown", head + "methods: \"jem,foo\"\n", []string{"methods", `unknown method "foo"`}},
		{"methods mapping", head + "methods: {a: 1}\n", []string{"line 3: cannot unmarshal !!map into []string"}},
		{"grid not mapping", head + "grid: [1]\n", []string{"line 3: cannot unmarshal !!seq into main.Grid"}},
		{"defaults not mapping", head + "defaults: 3\n", []string{"line 3: cannot unmarshal !!int `3` into main.Defaults"}},
		{"empty axis", head + "grid:\n  samples: []\n", []string{"line 4: a grid axis is a non-empty list of values, got !!seq"}},
		{"scalar axis", head + "grid:\n  samples: 100\n", []string{`line 4: a grid axis is a non-empty list of values, got !!int "100"`, "defaults"}},
		{"list default", head + "defaults:\n  samples: [1, 2]\n", []string{"line 4: cannot unmarshal !!seq into an integer"}},
		{"axis wrong type", head + "grid:\n  samples: [100, abc]\n", []string{`line 4: cannot unmarshal !!str "abc" into an integer`}},
		{"axis null", head + "grid:\n  lr: [0.1, ~]\n", []string{"line 4: null in a grid axis"}},
		{"lr zero", head + "grid:\n  lr: [0.1, 0]\n", []string{"grid point 1 (lr=0): lr must be a finite number > 0, got 0"}},
		{"lr negative default", head + "defaults:\n  lr: -0.5\n", []string{"grid point 0 (the only point): lr must be a finite number > 0, got -0.5"}},
		{"lr nan", head + "defaults:\n  lr: .nan\n", []string{"lr must be a finite number > 0, got NaN"}},
		{"lr inf", head + "grid:\n  lr: [.inf]\n", []string{"grid point 0 (lr=+Inf): lr must be a finite number > 0, got +Inf"}},
		{"lr quoted", head + "grid:\n  lr: [\"0.1\"]\n", []string{"line 4: cannot unmarshal !!str `0.1` into float64"}},
		{"px weight negative", head + "grid:\n  jem_px_weight: [1, -1]\n", []string{"grid point 1 (jem_px_weight=-1): jem_px_weight must be a finite number >= 0, got -1"}},
		{"samples zero", head + "grid:\n  samples: [0]\n", []string{"grid point 0 (samples=0): samples must be >= 1, got 0"}},
		{"steps zero", head + "defaults:\n  steps: 0\n", []string{"grid point 0 (the only point): steps must be >= 1, got 0"}},
		{"steps huge", head + "defaults:\n  steps: 1e9\n", []string{"Steps must be in [1, 16777216], got 1000000000"}},
		{"batch negative", head + "grid:\n  batch_size: [-1]\n", []string{"grid point 0 (batch_size=-1): batch_size must be >= 0"}},
		{"replicate negative", head + "grid:\n  replicate: [-1]\n", []string{"grid point 0 (replicate=-1): replicate must be >= 0, got -1"}},
		{"classes one", head + "defaults:\n  classes: 1\n", []string{"classes must be >= 2, got 1"}},
		{"x_values zero", head + "grid:\n  x_values: [0, 1]\n", []string{"grid point 0 (x_values=0): x_values must be >= 1, got 0"}},
		{"int out of range", head + "grid:\n  samples: [99999999999999999999999]\n", []string{`line 4: cannot unmarshal !!float "99999999999999999999999" into an integer`}},
		{"unknown encoding", head + "grid:\n  encoding: [scalar, onehott]\n", []string{"grid point 1 (encoding=onehott)", `unknown encoding "onehott"`}},
		{"unknown generator", head + "grid:\n  generator: [gauss]\n", []string{"grid.generator[0]", `unknown generator "gauss"`}},
		{"dirichlet alpha", head + "defaults:\n  generator: \"dirichlet:-1\"\n", []string{"defaults.generator", "dirichlet:-1", "ALPHA"}},
		{"dirichlet bare", head + "defaults:\n  generator: dirichlet\n", []string{"defaults.generator", "needs a concentration"}},
		{"file generator", head + "defaults:\n  generator: file\n", []string{"defaults.generator", `"file"`}},
		{"unknown model", head + "grid:\n  model: [linear, mlp]\n", []string{"grid.model[1]", `unknown model "mlp"`}},
		{"bad hidden size", head + "grid:\n  model: [\"mlp:0\"]\n", []string{"grid.model[0]", "hidden size"}},
		{"model number", head + "grid:\n  model: [3]\n", []string{`line 4: cannot unmarshal !!int "3" into a string`}},
		{"bad shape", head + "grid:\n  shape: [2x2, 2by2]\n", []string{"grid.shape[1]", `invalid shape "2by2"`}},
		{"shape one class", head + "grid:\n  shape: [\"3x1\"]\n", []string{"grid point 0 (shape=3x1): classes must be >= 2, got 1"}},
		{"shape too many cells", head + "grid:\n  shape: [\"1000x1000\"]\n", []string{"grid point 0 (shape=1000x1000)", "too many"}},
		{"duplicate value", head + "grid:\n  lr: [0.1, 0.10]\n", []string{"grid.lr[1]: duplicate value 0.1", "grid.lr[0]"}},
		{"duplicate canonical", head + "grid:\n  model: [\"mlp:4\", \"mlp: 4\"]\n", []string{"grid.model[1]: duplicate value mlp:4"}},
		{"axis in both", head + "defaults:\n  steps: 3\ngrid:\n  steps: [1, 2]\n", []string{"grid.steps: axis is also set in defaults.steps"}},
		{"shape and x_values", head + "defaults:\n  x_values: 3\ngrid:\n  shape: [2x2]\n", []string{"defaults.x_values: conflicts with grid.shape"}},
		{"shape and classes", head + "defaults:\n  shape: 2x2\ngrid:\n  classes: [2, 3]\n", []string{"grid.classes: conflicts with defaults.shape"}},
		{"replicates and replicate", head + "replicates: 3\ngrid:\n  replicate: [0]\n", []string{"replicates: conflicts with grid.replicate"}},
		{"replicates zero", head + "replicates: 0\n", []string{"replicates: must be >= 1, got 0"}},
		{"batch exceeds samples", head + "grid:\n  samples: [10, 100]\n  batch_size: [50]\n",
			[]string{"grid point 0 (samples=10 batch_size=50)", "batch_size 50 exceeds samples 10"}},
		{"cells from axes", head + "grid:\n  x_values: [65536]\n  classes: [2]\n", []string{"grid point 0 (x_values=65536 classes=2)", "too many"}},
		{"too many points", head + "grid:\n  samples: [" + many(200) + "]\n  steps: [" + many(51) + "]\n",
			[]string{"grid: more than 10000 grid points", "samples 200 × steps 51"}},
		{"too many values", head + "grid:\n  samples: [" + many(10001) + "]\n", []string{"grid: more than 10000 grid points (samples 10001)"}},
		{"too many tables", "name: e\ntables: 100000\ngrid:\n  samples: [" + many(101) + "]\n",
			[]string{"grid: 10100000 tables over 101 grid points is over the limit of 10000000"}},
		{"samples 1e15", head + "defaults:\n  samples: 1e15\n", []string{"grid point 0 (the only point): samples: 1000000000000000 draws per table is over the limit of 1000000000000"}},
		{"samples max int64", head + "grid:\n  samples: [10, 9223372036854775807]\n",
			[]string{"grid point 1 (samples=9223372036854775807): samples: 9223372036854775807 draws per table is over the limit of 1000000000000"}},
		{"tables over the limit", "name: e\ntables: 10000001\n", []string{"tables: 10000001 tables is over the limit of 10000000"}},
		{"huge mlp on one-hot", head + "defaults:\n  shape: 256x256\n  encoding: onehot\n  model: \"mlp:4096,4096,4096,4096\"\n",
			[]string{"grid point 0 (the only point)", "has 52445440 parameters per run, over the limit of 4194304"}},
		{"draws over the limit", "name: e\ntables: 2000000\ndefaults:\n  samples: 1e12\n",
			[]string{"grid: 2000000000000000000 draws (tables × samples) is over the limit of 1000000000000000000"}},
		{"long name cut", "name: " + strings.Repeat("A", 100000) + "\ntables: 2\n", []string{`name: invalid name "AAAA`, `"... (100000 characters)`}},
		{"long method cut", head + "methods: [" + strings.Repeat("j", 5000) + "]\n", []string{"unknown method", "(5000 characters)"}},
		{"key not scalar", head + "grid:\n  [a]: [1]\n", []string{"line 4: cannot unmarshal !!seq into string"}},
		{"merge key", head + "grid:\n  <<: {lrr: [1]}\n", []string{"line 4: field lrr not found in type main.Grid"}},
		{"json unknown key", `{"name": "e", "tables": 2, "grid": {"lrr": [0.1]}}`, []string{"line 1: field lrr not found in type main.Grid"}},
		{"tab json unknown key", "{\n\t\"name\": \"e\",\n\t\"tables\": 2,\n\t\"foo\": 1\n}", []string{"line 1: field foo not found in type main.Spec"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSpec([]byte(c.spec))
			if err == nil {
				t.Fatalf("accepted: %+v", s)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestPointsOfHandBuiltSpec: Points checks a Spec built in Go as strictly as a parsed one.
func TestPointsOfHandBuiltSpec(t *testing.T) {
	s := mustParse(t, "name: h\ntables: 2\ngrid:\n  lr: [0.1]\n")
	s.Defaults.LR = new(0.2)
	if _, err := s.Points(); err == nil || !strings.Contains(err.Error(), "grid.lr: axis is also set in defaults.lr") {
		t.Errorf("axis in both places: %v", err)
	}
	s.Grid.LR = nil
	s.Defaults.Steps = new(Int(0))
	if _, err := s.Points(); err == nil || !strings.Contains(err.Error(), "steps must be >= 1") {
		t.Errorf("steps 0: %v", err)
	}
	s.Defaults.Steps = new(Int(10))
	s.Grid.Model = List[Str]{"mlp:4", "mlp: 4"}
	if _, err := s.Points(); err == nil || !strings.Contains(err.Error(), "grid.model[1]: duplicate value mlp:4") {
		t.Errorf("duplicate model: %v", err)
	}
	s.Grid.Model = nil
	if ps, err := s.Points(); err != nil || ps[0].Steps != 10 || ps[0].LR != 0.2 {
		t.Errorf("points %+v: %v", ps, err)
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, b := range exampleSpecs(f) {
		f.Add(b)
	}
	if b, err := os.ReadFile("testdata/tabs.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("name: f\ntables: 3\nreplicates: 2\ndefaults:\n  shape: 3x3\ngrid:\n  batch_size: [0, 5]\n  samples: [5, 50]\n"))
	f.Add([]byte(`{"name":"j","tables":1,"methods":["jem"],"grid":{"model":["linear","mlp:2,2"],"encoding":["scalar","onehot"]}}`))
	f.Add([]byte("name: a\ntables: &n 4\ndefaults:\n  steps: *n\ngrid:\n  samples: &ns [10, 20]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec(data)
		if err != nil {
			if s != nil {
				t.Fatal("non-nil spec with an error")
			}
			return
		}
		ps, err := s.Points()
		if err != nil {
			t.Fatalf("accepted spec has no points: %v", err)
		}
		if len(ps) == 0 || len(ps) > MaxPoints || len(ps) != s.NumPoints() || len(ps)*int(s.Tables) > MaxTotalTables {
			t.Fatalf("%d points of %d tables", len(ps), s.Tables)
		}
		for i, p := range ps {
			if p.ID != int64(i) {
				t.Fatalf("point %d has ID %d", i, p.ID)
			}
			if err := p.Validate(); err != nil {
				t.Fatalf("point %d invalid: %v", i, err)
			}
		}
		checkRoundTrip(t, "fuzz", s)
	})
}

// TestSpecLimitsAgainstRunner: a spec is checked against the limits that hold on every
// runner; a local run is limited further by stages.Options.CheckLimits.
func TestSpecLimitsAgainstRunner(t *testing.T) {
	tests := []struct {
		name, spec string
		local      string // "" = a local run may start
		dataflow   string // "" = a Dataflow run may start
	}{
		{"example scale", "name: a\ntables: 100\ngrid:\n  samples: [30, 1000, 100000]\n", "", ""},
		{"ten million tables", "name: a\ntables: 10000000\nmethods: [baseline, jem]\n",
			"tables: 10000000 tables is over the local limit of 2000000 (run on Dataflow with --runner=dataflow to go higher)", ""},
		{"tables over points", "name: a\ntables: 700000\nmethods: [baseline, jem]\ngrid:\n  samples: [10, 20, 30]\n",
			"2100000 tables over 3 grid points is over the local limit of 2000000", ""},
		{"N held in memory", "name: a\ntables: 1\ngrid:\n  samples: [1000, 100000000]\n",
			"grid point 1: samples: 100000000 draws per table is over the local limit of 10000000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := mustPoints(t, mustParse(t, tt.spec))
			opts := stages.Options{Out: "mem://x", TrainBatch: tasks.DefaultTrainBatch, WriteSamples: true, Thresholds: stages.DefaultThresholds()}
			for _, c := range []struct {
				local bool
				want  string
			}{{true, tt.local}, {false, tt.dataflow}} {
				err := opts.CheckLimits(ps, c.local)
				if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
					t.Errorf("CheckLimits(local=%v) = %v, want %q", c.local, err, c.want)
				}
			}
		})
	}
}
