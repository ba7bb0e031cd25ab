package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/stages"
)

// TestCheckOverlap (D18): --out equal to, inside or containing an input folder, or a
// tables/tasks file inside --out, is refused with its own message before anything runs;
// an input folder holding a link is refused naming it.
func TestCheckOverlap(t *testing.T) {
	root := t.TempDir()
	export := filepath.Join(root, "export")
	if err := os.MkdirAll(filepath.Join(export, "samples"), 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(root, "linked")
	os.MkdirAll(linked, 0o755)
	os.Symlink("/etc", filepath.Join(linked, "samples"))
	cases := []struct {
		name     string
		out      string
		from     string
		inputs   []string
		tables   string
		tasks    string
		want     string // "" = allowed
		wantFlag string
	}{
		{"evaluate --out equal to --from", export, export, nil, "", "", "is the same folder as --from", "--from"},
		{"evaluate --out inside --from", filepath.Join(export, "ev"), export, nil, "", "", "is inside --from", "--from"},
		{"evaluate --out containing --from", root, export, nil, "", "", "contains --from", "--from"},
		{"evaluate --out through a link to --from", filepath.Join(root, "alias"), export, nil, "", "", "is the same folder as --from", "--from"},
		{"a logits folder inside --out", export, "", []string{filepath.Join(export, "samples")}, "", "", "contains input folder", "input folder"},
		{"--tables_from inside --out", root, "", nil, filepath.Join(export, "tables.csv"), "", "is inside --out", "--tables_from"},
		{"--tasks_from inside --out", export, "", nil, "", filepath.Join(export, "tasks.csv"), "is inside --out", "--tasks_from"},
		{"--from holding a link", filepath.Join(root, "ev"), linked, nil, "", "", "symbolic link", "samples -> /etc"},
		{"disjoint", filepath.Join(root, "ev"), export, []string{filepath.Join(root, "logits.csv")}, filepath.Join(root, "t.csv"), "", "", ""},
	}
	os.Symlink(export, filepath.Join(root, "alias"))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := &Config{Options: stages.Options{Out: c.out, TablesFrom: c.tables, TasksFrom: c.tasks}, Inputs: c.inputs,
				Extra: map[string]any{}}
			if c.from != "" {
				cfg.Extra["from"] = c.from
				cfg.Inputs = append(cfg.Inputs, c.from)
			}
			err := cfg.checkOverlap()
			if c.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.wantFlag) {
				t.Errorf("checkOverlap = %v; want bad input with %q and %q", err, c.want, c.wantFlag)
			}
		})
	}
}

// TestDryRunRefusedWhereItWouldRun (issue 33, item 7): --dry_run on a runner that has
// no dry run (prism and direct run the whole job in this process) is bad input; on
// Dataflow it is a dry run.
func TestDryRunRefusedWhereItWouldRun(t *testing.T) {
	setFlag(t, "dry_run", "true")
	for _, c := range []struct {
		runner string
		ok     bool
	}{{"prism", false}, {"direct", false}, {"DirectRunner", false}, {"universal", false}, {"dataflow", true}, {"DataflowRunner", true}} {
		t.Run(c.runner, func(t *testing.T) {
			err := checkDryRun(c.runner)
			if c.ok != (err == nil) || err != nil && (!errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "cannot describe a job without running it")) {
				t.Errorf("checkDryRun(%s) = %v, want ok %v", c.runner, err, c.ok)
			}
		})
	}
	// Execute refuses as well (a caller that skipped Prepare), before anything.
	out := filepath.Join(t.TempDir(), "out")
	cfg := &Config{Pipeline: "control", Runner: "prism", Options: stages.Options{Out: out}}
	if _, err := Execute(context.Background(), cfg, nil, os.Stdout); !errors.Is(err, ErrBadInput) {
		t.Errorf("Execute with --dry_run on prism = %v, want bad input", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out was created by a refused dry run")
	}
}
