package launch

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

func TestFlagErrorsAreShort(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantErr   bool
		want      string // the whole output for an error
		wantLines int    // at least this many lines for -help
	}{
		{"bad value", []string{"-samples=1e12"}, true,
			"control: error: invalid value \"1e12\" for flag -samples: parse error (run with -help for the flags)\n", 0},
		{"unknown flag", []string{"-sampels=10"}, true,
			"control: error: flag provided but not defined: -sampels: did you mean --samples? (run with -help for the flags)\n", 0},
		{"unknown flag, nothing near", []string{"-zzzzzz=10"}, true,
			"control: error: flag provided but not defined: -zzzzzz (run with -help for the flags)\n", 0},
		{"help", []string{"-help"}, true, "", 20},
		{"h", []string{"-h"}, true, "", 20},
		{"fine", []string{"-samples=10"}, false, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("control", flag.ContinueOnError)
			var out bytes.Buffer
			fs.SetOutput(&out)
			RegisterFlags(fs, Defaults{Tables: 1, Methods: "jem", Out: "x"})
			err := fs.Parse(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse = %v", err)
			}
			switch {
			case tt.wantLines > 0:
				if n := strings.Count(out.String(), "\n"); n < tt.wantLines || !strings.Contains(out.String(), "-x_encoding") {
					t.Errorf("-help printed %d lines:\n%s", n, out.String())
				}
			case out.String() != tt.want:
				t.Errorf("output = %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// TestAxisFlags: every axis of schemas.AxisDefs with a flag has it, with the axis's
// default and doc, and the flag sets the axis's field of the grid Config builds on.
func TestAxisFlags(t *testing.T) {
	values := map[string]string{"int": "7", "float": "0.25", "string": "zz", "bool": "true"}
	for _, a := range schemas.AxisDefs {
		t.Run(a.Key(), func(t *testing.T) {
			fs := flag.NewFlagSet("control", flag.ContinueOnError)
			f := RegisterFlags(fs, Defaults{Tables: 1, Methods: "jem", Out: "x"})
			name := a.FlagName()
			fl := fs.Lookup(name)
			if name == "" {
				if fs.Lookup(a.Key()) != nil {
					t.Fatalf("the axis has no flag, but --%s is defined", a.Key())
				}
				return
			}
			switch {
			case fl == nil:
				t.Fatalf("no flag --%s", name)
			case fl.DefValue != fmt.Sprint(a.Field.Default()):
				t.Errorf("--%s defaults to %s, the axis to %v", name, fl.DefValue, a.Field.Default())
			case fl.Usage != a.Doc:
				t.Errorf("--%s's help %q, the axis's doc %q", name, fl.Usage, a.Doc)
			}
			v := values[a.Type()]
			if err := fs.Parse([]string{"-" + name + "=" + v}); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(a.Field.Get(&f.grid)); got != v {
				t.Errorf("--%s=%s set the field to %s", name, v, got)
			}
		})
	}
}

// TestDidYouMean: an unknown flag's one-line error names the nearest flags of the
// command (or the reference implementation's hint), through the real parsing.
func TestDidYouMean(t *testing.T) {
	tests := []struct {
		name string
		arg  string
		want string // the message after "flag provided but not defined: -NAME"; "" for none
	}{
		{"transposition", "-sampels=10", ": did you mean --samples?"},
		{"transposition in steps", "-stpes=10", ": did you mean --steps?"},
		{"one letter extra", "-lrr=0.1", ": did you mean --lr?"},
		{"one letter missing", "-sgld_step=5", ": did you mean --sgld_steps?"},
		{"dashes for underscores", "-sgld-steps=5", ": did you mean --sgld_steps?"},
		{"upper case", "-SAMPLES=10", ": did you mean --samples?"},
		{"prefix", "-reinit=0.1", ": did you mean --reinit_freq?"},
		{"prefix of several", "-sgld=1", ": did you mean --sgld_clamp or --sgld_lr or --sgld_preset?"},
		{"near an alias", "-n_step=5", ": did you mean --n_steps?"},
		{"substring", "-px_weight=1", ": did you mean --p_x_weight?"},
		{"double dash", "--tabels=3", ": did you mean --tables?"},
		{"nothing near", "-zzzzzz=1", ""},
		{"reference epochs", "-n_epochs=10", ": jemcheck counts optimiser steps, not epochs: use --steps (an epoch is samples/batch_size steps)"},
		{"reference dataset", "--dataset=cifar10", ": jemcheck's data are its tasks: use --task"},
		{"reference optimizer", "-optimizer=adam", ": jemcheck trains with Adam"},
		{"reference save_dir", "-save_dir=x", ": jemcheck writes a run's outputs to --out"},
		{"reference warm-up with dashes", "-warmup-iters=1000", ": jemcheck's learning rate (--lr) is constant, with no warm-up"},
		{"reference flag misspelt", "-n_epoch=10", ": the reference implementation's --n_epochs? jemcheck counts optimiser steps, not epochs: use --steps"},
		{"reference flag in British spelling", "-optimiser=adam", ": the reference implementation's --optimizer? jemcheck trains with Adam"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("control", flag.ContinueOnError)
			var out bytes.Buffer
			fs.SetOutput(&out)
			RegisterFlags(fs, Defaults{Tables: 1, Methods: "jem", Out: "x"})
			if err := fs.Parse([]string{tt.arg}); err == nil {
				t.Fatalf("Parse(%s) succeeded", tt.arg)
			}
			name, _, _ := strings.Cut(strings.TrimLeft(tt.arg, "-"), "=")
			head := "control: error: flag provided but not defined: -" + name
			got := out.String()
			if !strings.HasPrefix(got, head) || !strings.HasSuffix(got, " (run with -help for the flags)\n") || strings.Count(got, "\n") != 1 {
				t.Fatalf("output %q is not one line %q...", got, head)
			}
			msg := strings.TrimSuffix(strings.TrimPrefix(got, head), " (run with -help for the flags)\n")
			if tt.want == "" && msg != "" || !strings.HasPrefix(msg, tt.want) {
				t.Errorf("message %q, want %q", msg, tt.want)
			}
		})
	}
}

// TestAliases: the reference implementation's names set their targets, -help lists
// them, and an alias given beside its target is refused.
func TestAliases(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(p stages.Point) bool
		wantErr string
	}{
		{"n_steps", []string{"-task=gmm:2,1", "-n_steps=7"}, func(p stages.Point) bool { return p.SGLDSteps == 7 }, ""},
		{"p_x_weight", []string{"-p_x_weight=0.5"}, func(p stages.Point) bool { return p.PxWeight == 0.5 }, ""},
		{"same names", []string{"-task=gmm:2,1", "-sgld_lr=0.5", "-sgld_std=0.02", "-buffer_size=500", "-reinit_freq=0.1", "-batch_size=32", "-lr=0.001"},
			func(p stages.Point) bool {
				return p.SGLDLR == 0.5 && p.SGLDStd == 0.02 && p.BufferSize == 500 && p.ReinitFreq == 0.1 && p.BatchSize == 32 && p.LR == 0.001
			}, ""},
		{"alias and target", []string{"-task=gmm:2,1", "-n_steps=7", "-sgld_steps=8"}, nil, "n_steps: alias of --sgld_steps, which is given too"},
		{"target and alias", []string{"-jem_px_weight=1", "-p_x_weight=0.5"}, nil, "p_x_weight: alias of --jem_px_weight, which is given too"},
		{"alias counts as given", []string{"-n_steps=7"}, nil, "sgld_steps: no method of this run uses it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("control", flag.ContinueOnError)
			fs.SetOutput(&bytes.Buffer{})
			f := RegisterFlags(fs, Defaults{Tables: 1, Methods: "baseline,jem", Out: "x"})
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.Config("control")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrBadInput) {
					t.Fatalf("Config = %v, want a bad-input error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(cfg.Points[0]) {
				t.Errorf("point %+v", cfg.Points[0].Grid)
			}
		})
	}
	fs := flag.NewFlagSet("control", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	RegisterFlags(fs, Defaults{Tables: 1, Methods: "jem", Out: "x"})
	_ = fs.Parse([]string{"-help"})
	for _, want := range []string{"-n_steps value\n    \talias of --sgld_steps (the reference implementation's name) (default 20)",
		"-p_x_weight value\n    \talias of --jem_px_weight (the reference implementation's name) (default 1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-help does not list %q", want)
		}
	}
}

// TestRefFlags: every alias's target and every same-name entry is a flag of the
// control command, no hint names one, and docs/flags.md carries the table.
func TestRefFlags(t *testing.T) {
	fs := flag.NewFlagSet("control", flag.ContinueOnError)
	RegisterFlags(fs, Defaults{Tables: 1, Methods: "jem", Out: "x"})
	seen := map[string]bool{}
	for _, r := range RefFlags {
		switch {
		case seen[r.Name]:
			t.Errorf("%s: listed twice", r.Name)
		case r.Flag != "" && fs.Lookup(r.Flag) == nil:
			t.Errorf("%s: jemcheck has no flag --%s", r.Name, r.Flag)
		case r.Flag == "" && fs.Lookup(r.Name) != nil:
			t.Errorf("%s: a jemcheck flag, but listed as one jemcheck does not take", r.Name)
		case r.Note == "":
			t.Errorf("%s: no note", r.Name)
		}
		seen[r.Name] = true
	}
	doc, err := os.ReadFile("../../../docs/flags.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := ReferenceFlagsMarkdown(); !strings.Contains(string(doc), want) {
		t.Errorf("docs/flags.md does not hold the reference flags table (launch.ReferenceFlagsMarkdown); paste:\n%s", want)
	}
}

// TestShortUsagePlain: a command that defines its own flags (evaluate's kind) gets the
// same one-line errors from ShortUsage, and no sweep-spec hint without --spec.
func TestShortUsagePlain(t *testing.T) {
	tests := []struct{ name, arg, want string }{
		{"did you mean", "-logit=x.csv", "evaluate: error: flag provided but not defined: -logit: did you mean --logits? (run with -help for the flags)\n"},
		{"an axis is no spec key here", "-lr=0.1", "evaluate: error: flag provided but not defined: -lr (run with -help for the flags)\n"},
		{"reference hint", "-n_epochs=3", "evaluate: error: flag provided but not defined: -n_epochs: jemcheck counts optimiser steps, not epochs: use --steps (an epoch is samples/batch_size steps) (run with -help for the flags)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("evaluate", flag.ContinueOnError)
			var out bytes.Buffer
			fs.SetOutput(&out)
			fs.String("logits", "", "")
			fs.String("from", "", "")
			ShortUsage(fs)
			if err := fs.Parse([]string{tt.arg}); err == nil {
				t.Fatal("Parse succeeded")
			}
			if out.String() != tt.want {
				t.Errorf("output %q, want %q", out.String(), tt.want)
			}
		})
	}
}
