package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// boardSpecs are the specs scripts/leaderboard.sh runs (the tuned ones are written by
// pick in the board's shape: sweeps/leaderboard.yaml stands for them).
func boardSpecs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"../../sweeps/leaderboard*.yaml", "../../sweeps/leaderboard/*.yaml"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) < 10 {
		t.Fatalf("found %d leaderboard specs: %v", len(out), out)
	}
	return out
}

// specPlan is what a spec runs: its tables, replicates and steps, and the number of
// runs (tasks × replicates × methods × the grid's other settings).
type specPlan struct {
	Tables, Replicates, Steps, Runs int
	Methods                         []string
	Grid                            map[string][]any
}

func planOf(t *testing.T, raw []byte) specPlan {
	t.Helper()
	var s struct {
		Tables, Replicates int
		Methods            []string
		Defaults           map[string]any
		Grid               map[string][]any
	}
	if err := yaml.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%v:\n%s", err, raw)
	}
	p := specPlan{Tables: s.Tables, Replicates: max(1, s.Replicates), Methods: s.Methods, Grid: s.Grid, Steps: 1500}
	if v, ok := s.Defaults["steps"].(int); ok {
		p.Steps = v
	}
	p.Runs = p.Tables * p.Replicates * len(p.Methods)
	for _, vs := range s.Grid {
		p.Runs *= len(vs)
	}
	return p
}

// TestSmokeSpec: the smoke board runs every spec of the full board with its methods,
// tasks and settings kept, at 3 tasks per family (2 on tuning specs), one run seed and
// 100 steps: a few hundredths of the full board's run-steps. Anything but a sweep spec
// is refused by name.
func TestSmokeSpec(t *testing.T) {
	fullWork, smokeWork := 0, 0
	for _, path := range boardSpecs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := smokeCmd(context.Background(), []string{path}, &buf); err != nil {
				t.Fatal(err)
			}
			full, smoke := planOf(t, raw), planOf(t, buf.Bytes())
			wantTables := min(full.Tables, smokeTables)
			if strings.HasPrefix(filepath.Base(path), "tune-") {
				wantTables = min(full.Tables, smokeTuneTables)
			}
			if smoke.Tables != wantTables || smoke.Replicates != 1 || smoke.Steps != smokeSteps {
				t.Errorf("smoke plan %+v, want %d tables, 1 replicate, %d steps", smoke, wantTables, smokeSteps)
			}
			if !slices.Equal(smoke.Methods, full.Methods) || !maps.EqualFunc(smoke.Grid, full.Grid, func(a, b []any) bool { return len(a) == len(b) }) {
				t.Errorf("smoke methods %v grid %v, want the full spec's %v %v", smoke.Methods, smoke.Grid, full.Methods, full.Grid)
			}
			fullWork += full.Runs * full.Steps
			smokeWork += smoke.Runs * smoke.Steps
		})
	}
	if smokeWork*50 > fullWork {
		t.Errorf("the smoke board's run-steps are %d, the full board's %d: want less than 1/50", smokeWork, fullWork)
	}
	t.Logf("run-steps: smoke %d, full %d (%.1f%%)", smokeWork, fullWork, 100*float64(smokeWork)/float64(fullWork))

	tmp := t.TempDir()
	for _, tc := range []struct{ name, spec, want string }{
		{"not YAML", "a: b: c", "not a YAML sweep spec"},
		{"a list", "- 1\n- 2\n", "not a sweep spec"},
		{"no name", "tables: 3\nmethods: [jem]\ngrid: {task: [moons:0.1]}\n", "no name"},
		{"no grid", "name: x\nmethods: [jem]\n", "not a leaderboard sweep"},
		{"bad tables", "name: x\ntables: many\nmethods: [jem]\ngrid: {task: [moons:0.1]}\n", `tables "many"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(tmp, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(tc.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			err := smokeCmd(context.Background(), []string{p}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("smoke %s = %v, want an error naming the file and %q", tc.name, err, tc.want)
			}
		})
	}
}
