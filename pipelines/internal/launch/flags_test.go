package launch

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
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
			"control: error: flag provided but not defined: -sampels (run with -help for the flags)\n", 0},
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
