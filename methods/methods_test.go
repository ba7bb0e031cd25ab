package methods_test

import (
	. "github.com/jemcheck/jemcheck/methods"
	_ "github.com/jemcheck/jemcheck/methods/all"
	"slices"
	"strings"
	"testing"
)

// TestTable: every entry has a unique name, a doc line and at least one kind, and a
// sampler is never a reference.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Table {
		t.Run(m.Name, func(t *testing.T) {
			switch {
			case m.Name == "" || seen[m.Name]:
				t.Errorf("name %q empty or listed twice", m.Name)
			case m.Doc == "" || strings.Contains(m.Doc, "\n"):
				t.Errorf("doc %q: want one line", m.Doc)
			case len(m.Kinds) == 0:
				t.Error("trains on no kind")
			case m.Sampler && m.Reference:
				t.Error("both a sampler and a reference")
			}
			seen[m.Name] = true
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		err      string
	}{
		{"one", "jem", []string{"jem"}, ""},
		{"spaces and empty items", " baseline, ,jem ", []string{"baseline", "jem"}, ""},
		{"order kept", "sgld,baseline", []string{"sgld", "baseline"}, ""},
		{"unknown", "jem,ebm", nil, `unknown method "ebm"`},
		{"twice", "jem,jem", nil, "listed twice"},
		{"none", " , ", nil, "no methods given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, method, kind, err string
	}{
		{"jem on tables", "jem", KindTable, ""},
		{"sgld on 2-D", "sgld", KindPlane, ""},
		{"sgld on tables", "sgld", KindTable, "method sgld trains on 2-D tasks (--task=gmm:K,C"},
		{"pcd on 2-D", "pcd-exact", KindPlane, "method pcd-exact trains on tables, not on task gmm:3,2 (methods for it: baseline, jem, jem-converged, oracle, sgld, mala, jarzynski, ed, shortrun, "},
		{"unknown", "ebm", KindTable, `unknown method "ebm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.method, tt.kind, "task gmm:3,2")
			if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Check(%s, %s) = %v, want %q", tt.method, tt.kind, err, tt.err)
			}
		})
	}
}

// TestOptions: an axis is read by the methods that list it, and only by them.
func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		methods []string
		axis    string
		want    bool
	}{
		{"sgld reads its preset", []string{"jem", "sgld"}, "sgld_preset", true},
		{"pcd reads the buffer", []string{"pcd"}, "buffer_size", true},
		{"pcd-exact has no buffer", []string{"pcd-exact"}, "buffer_size", false},
		{"the references read the training grid", []string{"oracle"}, "train_grid", true},
		{"the baseline reads no option", []string{"baseline"}, "train_grid", false},
		{"mala reads the sampler steps", []string{"mala"}, "sgld_steps", true},
		{"ed reads no sampler steps", []string{"ed"}, "sgld_steps", false},
		{"shortrun reads its noise", []string{"shortrun"}, "shortrun_noise", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Uses(tt.methods, tt.axis); got != tt.want {
				t.Errorf("Uses(%v, %s) = %v, want %v", tt.methods, tt.axis, got, tt.want)
			}
		})
	}
	if got := Using("buffer_size"); !slices.Equal(got, []string{"sgld", "pcd", "mala"}) {
		t.Errorf("Using(buffer_size) = %v, want [sgld pcd mala]", got)
	}
	// The registry's order, checked on the methods this test knows (a method added
	// later takes its own place without editing this test).
	inOrder := func(got, want []string) bool {
		var seen []string
		for _, m := range got {
			if slices.Contains(want, m) {
				seen = append(seen, m)
			}
		}
		return slices.Equal(seen, want)
	}
	if got := Samplers(); !inOrder(got, []string{"sgld", "pcd", "pcd-exact", "mala", "jarzynski", "ed", "shortrun", "nce", "tre", "dsm", "snl", "drl", External}) {
		t.Errorf("Samplers() = %v", got)
	}
	if got := For(KindPlane); !inOrder(got, []string{"baseline", "jem", "jem-converged", "oracle", "sgld", "mala", "jarzynski", "ed", "shortrun", "nce", "tre", "dsm", "snl", "drl"}) || slices.Contains(got, "pcd") {
		t.Errorf("For(plane) = %v", got)
	}
}

// TestExternal: a user's model's names resolve to External's entry, in the table's
// order; --methods never trains one.
func TestExternal(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"external", true}, {"external:my-jem_1.2", true}, {"external:", false}, {"external:a b", false}, {"jem:x", false}} {
		if m, ok := Lookup(tc.name); ok != tc.ok || (ok && !m.External) {
			t.Errorf("Lookup(%q) = %v, %v", tc.name, m.Name, ok)
		}
	}
	if Compare("external:a", "jem") <= 0 || Compare("external:a", "external:b") >= 0 {
		t.Error("Compare does not order user models after the table's methods, by name")
	}
	if _, err := Parse("jem,external"); err == nil || !strings.Contains(err.Error(), "pipelines/evaluate") {
		t.Errorf("Parse(jem,external) = %v", err)
	}
}
