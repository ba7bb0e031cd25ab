package schemas

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"

	"github.com/jemcheck/jemcheck/internal/allocs"
)

// TestAllocsPerRow is the allocation ceiling of writing result rows (issue 41): the
// marginal allocations per row of encoding a block's rows as Parquet (encodeParquet,
// what the write stage streams), and of a run's method_options column (ValuesJSON,
// interned: none on a hit). Each ceiling is what the code measured when it was set,
// times 1.25, plus 2; the test logs what it measures (go test -v).
func TestAllocsPerRow(t *testing.T) {
	rows := func(n int) []ResultRow {
		out := make([]ResultRow, n)
		for i := range out {
			out[i] = ResultRow{RunID: fmt.Sprintf("p0-t%d-jem", i), TableID: int64(i), Method: "jem", Encoding: "scalar",
				Generator: "uniform", Model: "linear", Task: "table", KLJoint: float64(i) / 7, MethodOptions: `{"sgld_lr":1}`}
		}
		return out
	}
	blocks := map[int][]ResultRow{256: rows(256), 1024: rows(1024)}
	write := allocs.PerUnit(3, 256, 1024, func(n int) {
		if err := encodeParquet(io.Discard, blocks[n]); err != nil {
			t.Fatal(err)
		}
	})
	g := DefaultGrid()
	keys := []string{"sgld_lr", "sgld_steps", "sgld_preset", "buffer_size", "reinit_freq", "sgld_clamp"}
	want := ValuesJSON(&g, keys)
	options := testing.AllocsPerRun(100, func() {
		if ValuesJSON(&g, keys) != want {
			t.Fatal("ValuesJSON changed between calls")
		}
	})
	t.Logf("allocations: per row written %.2f, per method_options column %.1f (%s)", write, options, want)
	if write > 2 {
		t.Errorf("encoding a result row allocates %.2f times, over its ceiling 2", write)
	}
	if options > 0 {
		t.Errorf("a run's method_options column allocates %.1f times, want 0 (interned per point)", options)
	}
}

// TestValuesJSON: the interned method_options column is what encoding the options
// afresh gives (each value's canonical text read back in its axis's type, sorted keys),
// and a changed value, an option set or unset, or another key list is never answered
// from another point's entry.
func TestValuesJSON(t *testing.T) {
	saved := slices.Clone(AxisDefs)
	t.Cleanup(func() { AxisDefs = saved; indexAxes() })
	RegisterOption(AxisDef{Field: OptionField("test_values_json_m", 4), Doc: "test option"},
		AxisDef{Field: OptionField("test_values_json_t", 0.5), Doc: "test option"})
	fresh := func(g *Grid, keys []string) string {
		o := Options{}
		for _, k := range keys {
			if a, ok := AxisByKey(k); ok {
				o[k] = fmt.Sprint(a.Field.Get(g))
				if f, isF := a.Field.Get(g).(float64); isF {
					o[k] = strconv.FormatFloat(f, 'g', -1, 64)
				}
			}
		}
		return o.JSON(keys)
	}
	keys := []string{"sgld_lr", "sgld_preset", "sgld_clamp", "buffer_size", "test_values_json_m", "test_values_json_t", "not_an_axis"}
	base := DefaultGrid()
	tests := []struct {
		name string
		edit func(g *Grid)
		keys []string
	}{
		{"defaults", func(*Grid) {}, keys},
		{"a Grid field", func(g *Grid) { g.SGLDLR = 1e-7 }, keys},
		{"a string and a bool", func(g *Grid) { g.SGLDPreset, g.SGLDClamp = "langevin", true }, keys},
		{"an option set", func(g *Grid) { mustAxis(t, "test_values_json_m").Field.Set(g, 16) }, keys},
		{"an option at a float", func(g *Grid) { mustAxis(t, "test_values_json_t").Field.Set(g, 0.125) }, keys},
		{"an option set to its default", func(g *Grid) { mustAxis(t, "test_values_json_m").Field.Set(g, 4) }, keys},
		{"fewer keys", func(*Grid) {}, keys[:2]},
		{"no axis", func(*Grid) {}, []string{"not_an_axis"}},
	}
	for round := range 2 { // the second round is answered from the memo
		for _, tt := range tests {
			g := base
			tt.edit(&g)
			if got, want := ValuesJSON(&g, tt.keys), fresh(&g, tt.keys); got != want {
				t.Errorf("round %d, %s: ValuesJSON = %q, want %q", round, tt.name, got, want)
			}
		}
	}
}

func mustAxis(t *testing.T, key string) AxisDef {
	t.Helper()
	a, ok := AxisByKey(key)
	if !ok {
		t.Fatalf("no axis %s", key)
	}
	return a
}
