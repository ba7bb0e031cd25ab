package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// small2D are the flags of a 2-D run of a few seconds: 2 tasks of 200 draws, 20 steps
// of a tiny MLP on a 32×32 grid (fine enough for every gmm component), no samples
// written, no report tables.
const small2D = "--task=gmm:2,1 --tables=2 --samples=200 --steps=20 --batch_size=16 --grid=32 --train_grid=32 --model=mlp:4 " +
	"--eval_every=10 --sgld_steps=2 --buffer_size=64 --report_tables=0 --write_samples=false"

// smallTables are the flags of a table run of a second.
const smallTables = "--tables=2 --samples=100 --steps=10 --report_tables=0 --write_samples=false"

// Outcomes a hostile input may have.
const (
	refused = iota // exit 2, one message line, nothing written
	anyEnd         // exit 0, 1 or 2 (no assertion on the message: another check may change it)
	ran            // exit 0 or 1: the run finished
)

// runCommand runs the test binary as the control command with args (split on spaces)
// and --out=out, and returns its exit status and output (stdout and stderr).
func runCommand(t *testing.T, args, out string) (int, string) {
	t.Helper()
	return launchtest.RunMain(t, args, out)
}

// TestHostileFlags runs the command on hostile flag combinations, 2-D and tables: each
// ends with exit 0, 1 or 2 and no Go panic; a refusal is exit 2 with one message line
// (naming the problem) and nothing written to --out.
func TestHostileFlags(t *testing.T) {
	tmp := t.TempDir()
	write := writer(t, tmp)
	fifo := filepath.Join(tmp, "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(tmp, "zero.csv")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "dir.csv")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const header = "task_id,y,component,weight,mu0,mu1,sd\n"
	oneTask := write("one.csv", header+"0,0,0,0.5,-1,0,0.5\n0,1,0,0.5,1,0,0.5\n")
	narrow := write("narrow.csv", header+"0,0,0,0.5,-1,0,0.001\n0,1,0,0.5,1,0,0.5\n")
	tests := []struct {
		name, args string
		outcome    int
		want       string // in the message of a refusal
	}{
		// 2-D draws held in memory (D1).
		{"huge 2-D N", "--task=gmm:3,2 --samples=100000000", refused, "draws per task is over the local limit"},
		{"2-D N over a block's limit", "--task=gmm:3,2 --samples=10000000", refused, "--train_batch="},
		{"2-D N overflowing int", "--task=gmm:3,2 --samples=9223372036854775807", refused, "samples"},
		// Special files (D13).
		{"tables from /dev/zero", "--tables_from=/dev/zero", refused, "/dev/zero"},
		{"tables from a link to /dev/zero", "--tables_from=" + zero, refused, "is a device"},
		{"tables from a FIFO", "--tables_from=" + fifo, refused, "named pipe"},
		{"tables from a directory", "--tables_from=" + dir, refused, "is a directory"},
		{"tasks from a FIFO", "--tasks_from=" + fifo, refused, "named pipe"},
		{"tasks from a link to /dev/zero", "--tasks_from=" + zero, refused, "is a device"},
		// Promise options (D8, D9).
		{"attack_eps overflowing float32", "--task=gmm:2,1 --attack_eps=1e39", refused, "float32"},
		{"attack_eps wider than the box", "--task=gmm:2,1 --attack_eps=100", refused, "wider than the box"},
		{"purify_lr overflowing float32", "--task=gmm:2,1 --purify_lr=1e39", refused, "purify_lr"},
		{"purify_steps negative", "--task=gmm:2,1 --purify_steps=-1", refused, "purify_steps"},
		{"sampler_chains too few", "--task=gmm:2,1 --sampler_chains=5", refused, "sampler_chains must be in [100, 1048576], got 5"},
		{"sampler_chains on tables", "--sampler_chains=1000", refused, "2-D tasks only"},
		{"attack_eps on tables", "--attack_eps=1e39", refused, "2-D tasks only"},
		{"ood on tables", "--ood=other-task --tables=1", refused, "ood applies to 2-D tasks only"},
		{"other task of moons", "--task=moons:0.1 --ood=other-task", refused, "other-task"},
		{"other task of one user task", "--tasks_from=" + oneTask + " --ood=other-task", refused, "holds one task"},
		{"unknown ood", "--task=gmm:2,1 --ood=far", refused, "ood"},
		// Flags the run would ignore (D7).
		{"GoMLX backend on 2-D", "--task=gmm:2,1 --backend=go", refused, "does not apply to the 2-D task"},
		{"XLA backend on 2-D", "--task=gmm:2,1 --backend=xla:cuda", refused, "backend"},
		{"GoMLX backend with pcd", "--methods=jem,pcd --backend=go", refused, "fused float32 kernels only"},
		{"kernel backend on an uncovered model", "--backend=kernel --model=mlp:512,512", refused, "do not cover"},
		{"pcd on an uncovered table", "--methods=jem,pcd --x_values=100 --classes=100", refused, "do not cover"},
		{"sgld option without sgld", "--sgld_steps=5 --methods=jem", refused, "sgld_steps: no method of this run uses it"},
		{"2-D sgld option without sgld", "--task=gmm:2,1 --methods=jem --sgld_lr=2", refused, "sgld_lr"},
		{"buffer without a sampler", "--task=gmm:2,1 --methods=baseline,jem --buffer_size=10", refused, "buffer_size"},
		{"pcd option without pcd", "--chain_steps=3", refused, "chain_steps"},
		{"pcd proposal with pcd-exact", "--methods=jem,pcd-exact --proposal=neighbour", refused, "proposal"},
		{"train grid without jem", "--task=gmm:2,1 --methods=baseline,sgld --train_grid=8", refused, "train_grid"},
		{"grid on tables", "--grid=8", refused, "2-D tasks only"},
		{"classes on 2-D", "--task=gmm:2,1 --classes=5", refused, "tables only"},
		{"task beside a tasks file", "--tasks_from=" + oneTask + " --task=gmm:2,1", refused, "leave --task out"},
		{"x_values beside a tables file", "--tables_from=" + zero + " --x_values=3", refused, "x_values"},
		// Unbounded costs (D12).
		{"curve points", "--task=gmm:2,1 --eval_every=1 --steps=1000000", refused, "curve points"},
		// Bad 2-D values.
		{"sgld_lr overflowing float32", "--task=gmm:2,1 --sgld_lr=1e39", refused, ""},
		{"sgld steps huge", "--task=gmm:2,1 --sgld_steps=1000000000", refused, "sgld_steps"},
		{"reinit NaN", "--task=gmm:2,1 --reinit_freq=NaN", refused, "reinit_freq"},
		{"lr NaN", "--task=gmm:2,1 --lr=NaN", refused, "lr"},
		{"negative samples", "--task=gmm:2,1 --samples=-1", refused, "samples"},
		{"zero steps", "--task=gmm:2,1 --steps=0", refused, "steps"},
		{"zero tasks", "--task=gmm:2,1 --tables=0", refused, "tables"},
		{"grid huge", "--task=gmm:2,1 --grid=100000", refused, "grid"},
		{"gmm of no classes", "--task=gmm:0,0", refused, "task"},
		{"gmm of a million classes", "--task=gmm:1000000,1", refused, ""},
		{"negative sigma", "--task=moons:-1", refused, "task"},
		{"NaN sigma", "--task=circles:NaN", refused, "task"},
		{"empty model", "--task=gmm:2,1 --model=mlp:0", refused, "model"},
		{"batch over samples", "--task=gmm:2,1 --batch_size=100000000", refused, ""},
		// Another check decides these (the truth, box and grid checks): any clean end.
		{"box huge", small2D + " --box=1000", anyEnd, ""},
		{"box tiny", small2D + " --box=1", anyEnd, ""},
		{"narrow user component", small2D + " --tasks_from=" + narrow, anyEnd, ""},
		{"narrow circles on a coarse grid", strings.Replace(small2D, "--task=gmm:2,1", "--task=circles:0.02", 1), anyEnd, ""},
		// Runs that make sense.
		{"other task of one gmm task", strings.Replace(small2D, "--tables=2", "--tables=1", 1) + " --ood=other-task", ran, ""},
		{"kernel backend on 2-D", small2D + " --backend=kernel", ran, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			code, msg := runCommand(t, tt.args, out)
			if strings.Contains(msg, "panic") || strings.Contains(msg, "goroutine ") {
				t.Fatalf("a Go panic (exit %d):\n%s", code, msg)
			}
			switch tt.outcome {
			case refused:
				if code != 2 {
					t.Fatalf("exit %d, want 2 (refused); output:\n%s", code, msg)
				}
				lines := strings.Split(strings.TrimSpace(msg), "\n")
				if len(lines) != 1 || !strings.HasPrefix(lines[0], "control: error: ") {
					t.Errorf("want one message line, got %d:\n%s", len(lines), msg)
				}
				if !strings.Contains(msg, tt.want) {
					t.Errorf("message %q does not mention %q", msg, tt.want)
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("%s was created for a refused input", out)
				}
			case anyEnd:
				if code != 0 && code != 1 && code != 2 {
					t.Fatalf("exit %d, want 0, 1 or 2; output:\n%s", code, msg)
				}
			case ran:
				if code != 0 && code != 1 {
					t.Fatalf("exit %d, want 0 or 1 (a finished run); output:\n%s", code, msg)
				}
			}
		})
	}
}

// TestConfigRecordsWhatRan: config.json of a table run records no 2-D options (no
// curves, no promises), and a 2-D run's records the ones it ran with.
func TestConfigRecordsWhatRan(t *testing.T) {
	tests := []struct {
		name, args string
		evalEvery  float64
		ood        string
	}{
		{"tables", smallTables, 0, ""},
		{"2-D", small2D + " --ood=shifted", 10, "shifted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			if code, msg := runCommand(t, tt.args, out); code != 0 && code != 1 {
				t.Fatalf("exit %d:\n%s", code, msg)
			}
			raw, err := os.ReadFile(filepath.Join(out, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Options map[string]any `json:"options"`
			}
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatal(err)
			}
			if got := cfg.Options["eval_every"]; got != tt.evalEvery {
				t.Errorf("eval_every = %v, want %v", got, tt.evalEvery)
			}
			if got := cfg.Options["ood"]; got != tt.ood {
				t.Errorf("ood = %v, want %q", got, tt.ood)
			}
		})
	}
}

// TestWorkerErrorsOneLine: a failed bundle's log record, which holds the bundle's whole
// execution plan, is not printed (the run's error gives its cause in one line), and a
// worker's multi-line warning is cut to its first line (D10).
func TestWorkerErrorsOneLine(t *testing.T) {
	t.Setenv("JEMCHECK_LOG", "")
	prev := slog.Default()
	defer slog.SetDefault(prev)
	var buf bytes.Buffer
	launch.Logging(&buf)
	slog.Error("[SDK] process bundle failed for instruction inst001 using plan stage-001 : while executing Process for Plan[stage-001]:\n" +
		"1: DataSource[S[stage-001_source@localhost:43197], i0] Out:43\n43: ParDo[beam.createFn] Out:[42]\n\tcaused by:\nDoFn[UID:36] failed:\nboom")
	slog.Warn("[SDK] a worker's warning\nits second line")
	got := buf.String()
	if strings.Contains(got, "Plan[") || strings.Contains(got, "DataSource") || strings.Contains(got, "second line") {
		t.Errorf("a plan or a second line was printed:\n%s", got)
	}
	if !strings.Contains(got, "a worker's warning") || strings.Count(got, "\n") != 1 {
		t.Errorf("want the warning's first line alone, got:\n%s", got)
	}
}
