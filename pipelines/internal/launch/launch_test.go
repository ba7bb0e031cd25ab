package launch

import (
	"context"
	"flag"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/stages"
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

// TestProgressHandler: of the records prism logs in-process, only the stages' progress
// lines and the workers' warnings and errors are printed.
func TestProgressHandler(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level
		msg   string
		want  string // "" = dropped
	}{
		{"progress", slog.LevelInfo, "[SDK] " + stages.ProgressPrefix + "train: 10 runs", "train: 10 runs"},
		{"harness info", slog.LevelInfo, "[SDK] stopping worker", ""},
		{"runner chatter", slog.LevelInfo, "Serving JobManagement", ""},
		{"runner error", slog.LevelError, "job failed", ""},
		{"worker error", slog.LevelError, "[SDK] DoFn failed", "ERROR: [SDK] DoFn failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf strings.Builder
			h := &progressHandler{mu: &sync.Mutex{}, w: &buf, start: time.Now()}
			if err := h.Handle(context.Background(), slog.NewRecord(time.Now(), tt.level, tt.msg, 0)); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSpace(buf.String())
			if tt.want == "" && got != "" || tt.want != "" && !strings.HasSuffix(got, " "+tt.want) {
				t.Errorf("printed %q, want %q", got, tt.want)
			}
		})
	}
}
