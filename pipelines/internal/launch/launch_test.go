package launch

import (
	"context"
	"flag"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

func TestWorkersInProcess(t *testing.T) {
	tests := []struct {
		name, runner, endpoint, env string
		want                        bool
	}{
		{"prism in-process", "prism", "", "", true},
		{"default runner", "", "", "", true},
		{"direct", "direct", "", "", true},
		{"prism job server, loopback", "prism", "localhost:8073", "LOOPBACK", true},
		{"prism job server, docker", "prism", "localhost:8073", "DOCKER", false},
		{"universal loopback", "universal", "localhost:8073", "loopback", true},
		{"universal docker", "universal", "localhost:8073", "", false},
		{"dataflow", "dataflow", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setFlag(t, "endpoint", tt.endpoint)
			setFlag(t, "environment_type", tt.env)
			if got := workersInProcess(tt.runner); got != tt.want {
				t.Errorf("workersInProcess(%q) with endpoint %q, environment %q = %v, want %v",
					tt.runner, tt.endpoint, tt.env, got, tt.want)
			}
		})
	}
}

// setFlag sets one of Beam's flags on the command line flag set for one test.
func setFlag(t *testing.T, name, value string) {
	t.Helper()
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("flag --%s is not registered", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

func TestClearPrevious(t *testing.T) {
	ctx := context.Background()
	b, err := schemas.OpenBucket(ctx, "mem://launch-clear")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	owned := []string{"config.json", "results.parquet", "samples/point-0000-part-00003.parquet", "figures/kl_dist.svg"}
	kept := []string{"notes.txt", "samples/mine.csv", "archive/results.parquet"}
	for _, k := range append(slices.Clone(owned), kept...) {
		if err := b.WriteAll(ctx, k, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := clearPrevious(ctx, b)
	if err != nil || n != len(owned) {
		t.Fatalf("clearPrevious = %d, %v; want %d, nil", n, err, len(owned))
	}
	for _, k := range owned {
		if ok, _ := b.Exists(ctx, k); ok {
			t.Errorf("%s not deleted", k)
		}
	}
	for _, k := range kept {
		if ok, _ := b.Exists(ctx, k); !ok {
			t.Errorf("%s deleted", k)
		}
	}
	if n, err := clearPrevious(ctx, b); n != 0 || err != nil {
		t.Errorf("second clearPrevious = %d, %v; want 0, nil", n, err)
	}
}
