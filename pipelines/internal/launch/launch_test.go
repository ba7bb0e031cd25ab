package launch

import (
	"flag"
	"testing"

	"github.com/jemcheck/jemcheck/storage"
)

// TestSubLocationBuckets: a staging folder inside a gs:// or s3:// --out is the same
// bucket with a longer key prefix (the URL path is a folder, not ignored).
func TestSubLocationBuckets(t *testing.T) {
	cases := []struct{ loc, want string }{
		{"gs://bucket/runs/r1", "gs://bucket?prefix=runs%2Fr1%2F.s%2F"},
		{"gs://bucket", "gs://bucket?prefix=.s%2F"},
		{"s3://bucket?region=eu-west-1&prefix=a/", "s3://bucket?prefix=a%2F.s%2F&region=eu-west-1"},
	}
	for _, c := range cases {
		t.Run(c.loc, func(t *testing.T) {
			got, err := storage.SubLocation(c.loc, ".s/")
			if err != nil || got != c.want {
				t.Errorf("SubLocation = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

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
