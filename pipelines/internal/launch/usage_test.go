package launch

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/methods"
)

// TestHelp: -help starts with a usage line and three examples, lists every method
// jemcheck trains (methods.Table) in the -methods help, states each default once, and
// ends with one line naming --help_runner for Beam's runner flags, which --help_runner
// lists in full under their own heading.
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"control", "regress"} {
		t.Run(cmd, func(t *testing.T) {
			fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
			var out bytes.Buffer
			fs.SetOutput(&out)
			RegisterFlags(fs, Defaults{Tables: 1000, Methods: "baseline,jem,oracle", Out: "./out"})
			fs.String("runner", "", "a Beam runner flag") // as Beam defines it on flag.CommandLine
			if err := fs.Parse([]string{"-help"}); err != flag.ErrHelp {
				t.Fatalf("Parse(-help) = %v", err)
			}
			help := out.String()
			lines := strings.Split(help, "\n")
			if !strings.HasPrefix(lines[0], "Usage: "+cmd+" ") {
				t.Errorf("first line %q is not a usage line", lines[0])
			}
			ex := strings.Index(help, "\nExamples")
			if ex < 0 {
				t.Fatal("no examples")
			}
			n := 0
			for _, l := range strings.Split(help[ex:], "\n")[2:] {
				if !strings.HasPrefix(l, "  "+cmd) {
					break
				}
				n++
			}
			if n != 3 {
				t.Errorf("%d examples, want 3", n)
			}
			_, methodsHelp, _ := strings.Cut(help, "\n  -methods string\n")
			methodsHelp, _, _ = strings.Cut(methodsHelp, "\n  -")
			for _, m := range methods.Table {
				if !m.External && !strings.Contains(methodsHelp, "\n    \t  "+m.Name+" ") {
					t.Errorf("-methods help does not list %s:\n%s", m.Name, methodsHelp)
				}
			}
			for _, m := range []string{"mala", "jarzynski", "ed", "shortrun", "jem-converged"} {
				if !strings.Contains(methodsHelp, "  "+m+" ") {
					t.Errorf("-methods help does not list %s", m)
				}
			}
			for _, l := range lines {
				if strings.Count(l, "(default") > 1 {
					t.Errorf("a default stated twice: %q", l)
				}
			}
			if !strings.Contains(help, "(default 1000; 2-D tasks 100") {
				t.Errorf("-tables help does not give the per-kind defaults:\n%s", help)
			}
			runner := strings.Index(help, "\n"+runnerTitle+": 1 flags, listed by --help_runner\n")
			if runner < 0 || strings.Contains(help, "\n  -runner string\n") {
				t.Fatalf("-help lists the runner's flags, or does not name --help_runner under %q:\n%s", runnerTitle, help)
			}
			var full bytes.Buffer
			printUsageOf(&full, fs, true)
			if r := strings.Index(full.String(), "\n"+runnerTitle+":\n"); r < 0 || !strings.Contains(full.String()[r:], "\n  -runner string\n") {
				t.Errorf("--help_runner does not list the runner flag under %q", runnerTitle)
			}
			for _, own := range []string{"-tables int", "-methods string", "-out string", "-sgld_lr float", "-p_x_weight value"} {
				if i := strings.Index(help, "\n  "+own+"\n"); i < 0 || i > runner {
					t.Errorf("%s is not listed before the runner flags", own)
				}
			}
		})
	}
}

// TestRunnerFlags: the flags the imported packages define on flag.CommandLine are
// Beam's runner flags, and none of jemcheck's.
func TestRunnerFlags(t *testing.T) {
	for _, name := range []string{"runner", "project", "region", "staging_location", "endpoint", "environment_type"} {
		if !runnerFlags[name] {
			t.Errorf("--%s is not among the runner flags", name)
		}
	}
	fs := flag.NewFlagSet("control", flag.ContinueOnError)
	RegisterFlags(fs, Defaults{Tables: 1, Methods: "jem", Out: "x"})
	fs.VisitAll(func(f *flag.Flag) {
		if runnerFlags[f.Name] {
			t.Errorf("jemcheck's --%s is also a runner flag", f.Name)
		}
	})
}

// TestPortableNote: the portable build says, on a CPU with AVX-512, how much faster the
// other build is and how to get it; the AVX-512 build, and a CPU without AVX-512, say
// nothing.
func TestPortableNote(t *testing.T) {
	for _, tt := range []struct {
		build  string
		avx512 bool
		want   bool
	}{{"portable", true, true}, {"portable", false, false}, {"avx512", true, false}} {
		n := portableNote(tt.build, tt.avx512)
		if got := n != ""; got != tt.want {
			t.Errorf("portableNote(%s, AVX-512 %v) = %q, want a note %v", tt.build, tt.avx512, n, tt.want)
		}
		if tt.want && (!strings.Contains(n, "GOEXPERIMENT=simd go build") || !strings.Contains(n, "faster")) {
			t.Errorf("the note %q does not say how much faster and how to build it", n)
		}
	}
}
