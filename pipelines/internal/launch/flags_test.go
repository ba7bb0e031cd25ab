package launch

import (
	"bytes"
	"flag"
	"strings"
	"testing"
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
