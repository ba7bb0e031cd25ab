package schemas

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
)

// updateAxes rewrites testdata/axes.md (the same flag rewrites the sweep spec's
// generated types in pipelines/sweep).
var updateAxes = flag.Bool("update_axes", false, "rewrite testdata/axes.md from AxisDefs")

// otherValue is a value of v's type other than v.
func otherValue(v any) any {
	switch v := v.(type) {
	case int:
		return v + 7
	case float64:
		return v + 0.5
	case string:
		return v + "x"
	}
	return !v.(bool)
}

// TestAxisDefs: every axis names a field of Grid of its default's type, whose JSON name
// is its key; its setter and getter round-trip a value through that field alone; and
// its key, flag and report key are its own.
func TestAxisDefs(t *testing.T) {
	keys, flags, figures := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, a := range AxisDefs {
		t.Run(a.Key(), func(t *testing.T) {
			f := a.StructField()
			if f.Type != reflect.TypeOf(a.Field.Default()) {
				t.Errorf("field %s is a %v, the default %#v", f.Name, f.Type, a.Field.Default())
			}
			if a.Key() == "" || keys[a.Key()] {
				t.Errorf("key %q: empty or repeated", a.Key())
			}
			keys[a.Key()] = true
			if name := a.FlagName(); name != "" {
				if flags[name] {
					t.Errorf("flag %q repeated", name)
				}
				flags[name] = true
			}
			if a.Label != "" {
				fig := a.ReportKey()
				if figures[fig] || fig == "size" {
					t.Errorf("report key %q repeated", fig)
				}
				figures[fig] = true
			}
			if a.Doc == "" || strings.Contains(a.Doc, "\n") {
				t.Errorf("doc %q is not one line", a.Doc)
			}
			g := DefaultGrid()
			if got := a.Field.Get(&g); got != a.Field.Default() {
				t.Errorf("Get(DefaultGrid()) = %#v, want the default %#v", got, a.Field.Default())
			}
			want := g
			v := otherValue(a.Field.Default())
			reflect.ValueOf(&want).Elem().FieldByName(f.Name).Set(reflect.ValueOf(v))
			a.Field.Set(&g, v)
			if got := a.Field.Get(&g); got != v || !reflect.DeepEqual(g, want) {
				t.Errorf("Set(%#v): Get = %#v, grid %+v, want %+v", v, got, g, want)
			}
			if p := reflect.ValueOf(a.Field.Ptr(&g)); p.Elem().Interface() != v || p.Pointer() != reflect.ValueOf(&g).Elem().FieldByName(f.Name).Addr().Pointer() {
				t.Errorf("Ptr is not the field %s", f.Name)
			}
		})
	}
}

// TestAxesMarkdown: testdata/axes.md is the axes' documentation (-update_axes rewrites
// it).
func TestAxesMarkdown(t *testing.T) {
	const golden = "testdata/axes.md"
	md := AxesMarkdown()
	if *updateAxes {
		if err := os.WriteFile(golden, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if md != string(want) {
		t.Errorf("AxesMarkdown() is not %s (go test ./schemas -update_axes):\n%s", golden, md)
	}
	if n := strings.Count(md, "\n"); n != len(AxisDefs)+2 {
		t.Errorf("%d lines for %d axes", n, len(AxisDefs))
	}
}
