package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/tasks/blocks"
)

// TestMain runs the pipelines on prism in-process; with launchtest.EnvArgs set, the
// test binary is the evaluate command.
func TestMain(m *testing.M) { launchtest.Main(m, "evaluate", main) }

// tablePoint is a small table point: 12 tables of 6 values and 3 classes.
func tablePoint() stages.Point {
	return stages.Point{Grid: schemas.Grid{XValues: 6, Classes: 3, Encoding: "onehot", Generator: "dirichlet:1", Samples: 300,
		Model: "linear", LR: 0.05, Steps: 300, PxWeight: 1}, Tables: 12, Methods: []string{"baseline", "jem"}}
}

// writeFrom writes the config.json of an export of p into a new folder.
func writeFrom(t *testing.T, p stages.Point) string {
	t.Helper()
	dir := t.TempDir()
	cfg := launch.Config{Pipeline: "export", Runner: "prism", Points: []stages.Point{p},
		Options: stages.Options{Seed: 5, Out: dir, TrainBatch: 64, WriteSamples: true, ReportTables: 1, Thresholds: stages.DefaultThresholds()}}
	cfg.Options.Resolve(cfg.Points)
	cfg.Points[0].Resolve()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg.JSON()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// truthRows are the rows of a logits file whose logits are the log of every task's
// true joint (f(x)[y] = log p(x, y)), as model name.
func truthRows(t *testing.T, from string, name string) [][]string {
	t.Helper()
	ctx := context.Background()
	cfg, err := readConfig(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Points[0]
	src, err := tasks.MustOf(p.Task).Open(ctx, tasks.Env{Options: cfg.Options}, p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var rows [][]string
	for o := range p.Tables {
		id, truth, err := src.Truth(int64(o))
		if err != nil {
			t.Fatal(err)
		}
		for c, v := range truth {
			rows = append(rows, []string{fmt.Sprint(id), fmt.Sprint(c / p.Classes), fmt.Sprint(c % p.Classes),
				strconv.FormatFloat(math.Log(v), 'g', -1, 64), name})
		}
	}
	return rows
}

func writeCSV(t *testing.T, path string, header []string, rows [][]string) string {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(header)
	w.WriteAll(rows)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func evaluate(t *testing.T, c Config) (string, []schemas.ResultRow) {
	t.Helper()
	var buf bytes.Buffer
	c.Stdout = &buf
	if c.Methods == "" {
		c.Methods = "baseline,jem"
	}
	if c.Model == "" {
		c.Model = "external"
	}
	if err := run(context.Background(), c, &buf); err != nil {
		t.Fatalf("evaluate: %v\n%s", err, buf.String())
	}
	return buf.String(), launchtest.Results(t, c.Out)
}

// TestTruthAndFedBack: the true log joint as a model's logits scores KL 0 and the AUROC
// ceiling exactly; a finished evaluation's own learned/ folder fed back as logits
// reproduces every method's numbers bit for bit (jem's logits evaluated as a user's
// model score exactly jem's KLs).
func TestTruthAndFedBack(t *testing.T) {
	from := writeFrom(t, tablePoint())
	tmp := t.TempDir()
	logits := writeCSV(t, filepath.Join(tmp, "truth.csv"), []string{"table_id", "x", "y", "logit", "model"}, truthRows(t, from, "truth"))
	out1 := filepath.Join(tmp, "out1")
	msg, rows := evaluate(t, Config{From: from, Logits: logits, Out: out1})
	if !strings.Contains(msg, "external:truth: excess joint KL over exact jem") {
		t.Errorf("no comparison line:\n%s", msg)
	}
	byRun := map[string]schemas.ResultRow{}
	n := 0
	for _, r := range rows {
		byRun[fmt.Sprintf("%d/%s", r.TableID, r.Method)] = r
		if r.Method != "external:truth" {
			continue
		}
		n++
		if r.KLJoint > 1e-12 || r.KLMarginal > 1e-12 || r.KLConditional > 1e-12 || r.AUROCPx != r.AUROCTruePx || r.Accuracy != r.BayesAccuracy {
			t.Errorf("table %d: the truth scores KL %g/%g/%g, AUROC %v (ceiling %v), accuracy %v (Bayes %v)", r.TableID,
				r.KLJoint, r.KLMarginal, r.KLConditional, r.AUROCPx, r.AUROCTruePx, r.Accuracy, r.BayesAccuracy)
		}
	}
	if n != 12 || len(rows) != 36 {
		t.Fatalf("%d rows, %d of the truth model; want 36 and 12", len(rows), n)
	}
	// Fed back: the learned/ folder of the first evaluation (baseline, jem and the truth).
	out2 := filepath.Join(tmp, "out2")
	_, rows2 := evaluate(t, Config{From: from, Logits: filepath.Join(out1, "learned") + "/", Out: out2, Methods: "jem"})
	m := 0
	for _, r := range rows2 {
		if !strings.HasPrefix(r.Method, "external:") {
			continue
		}
		name := r.Method // the truth model keeps its name; jemcheck's own runs come back as external:baseline, external:jem
		if n := strings.TrimPrefix(name, "external:"); n == "baseline" || n == "jem" {
			name = n
		}
		want, ok := byRun[fmt.Sprintf("%d/%s", r.TableID, name)]
		if !ok {
			t.Fatalf("fed back %s: no such run in the first evaluation", r.Method)
		}
		m++
		if r.KLJoint != want.KLJoint || r.KLMarginal != want.KLMarginal || r.KLConditional != want.KLConditional || r.Accuracy != want.Accuracy || r.AUROCPx != want.AUROCPx {
			t.Errorf("table %d %s fed back: KL %v/%v/%v, want %v/%v/%v", r.TableID, r.Method, r.KLJoint, r.KLMarginal, r.KLConditional,
				want.KLJoint, want.KLMarginal, want.KLConditional)
		}
	}
	if m != 36 {
		t.Errorf("%d fed-back runs, want 36 (baseline, jem and truth on 12 tables)", m)
	}
}

// TestBadLogits: a logits file that does not fit the tasks is refused with exit 2, one
// line naming the problem, and nothing written.
func TestBadLogits(t *testing.T) {
	from := writeFrom(t, tablePoint())
	tmp := t.TempDir()
	good := truthRows(t, from, "m")
	header := []string{"table_id", "x", "y", "logit", "model"}
	edit := func(f func(rows [][]string) [][]string) [][]string {
		rows := make([][]string, len(good))
		for i := range good {
			rows[i] = append([]string(nil), good[i]...)
		}
		return f(rows)
	}
	cases := []struct {
		name   string
		header []string
		rows   [][]string
		args   string
		want   string
	}{
		{"missing cell", header, edit(func(r [][]string) [][]string { return r[1:] }), "", "gives task 0 no logit at x 0, y 0"},
		{"NaN", header, edit(func(r [][]string) [][]string { r[5][3] = "NaN"; return r }), "", "line 7: logit NaN is not a finite number"},
		{"+Inf", header, edit(func(r [][]string) [][]string { r[5][3] = "+Inf"; return r }), "", "is not a finite number"},
		{"not a number", header, edit(func(r [][]string) [][]string { r[2][3] = "abc"; return r }), "", `logit "abc" is not a number`},
		{"another task's id", header, edit(func(r [][]string) [][]string { r[3][0] = "99"; return r }), "", "table_id 99 is not a task of this point (ids 0..11)"},
		{"x outside", header, edit(func(r [][]string) [][]string { r[3][1] = "6"; return r }), "", "x 6 is outside the support"},
		{"wrong class", header, edit(func(r [][]string) [][]string { r[3][2] = "3"; return r }), "", "y 3 is not a class"},
		{"twice", header, edit(func(r [][]string) [][]string { return append(r, r[4]) }), "", "a second logit"},
		{"not the first tasks", header, edit(func(r [][]string) [][]string { return r[18:] }), "", "table_id 0 is missing"},
		{"wrong shape", []string{"task_id", "cell", "y", "logit"}, good, "", `missing column "table_id"`},
		{"bad model name", header, edit(func(r [][]string) [][]string {
			for i := range r {
				r[i][4] = "my model"
			}
			return r
		}), "", `model name "my model"`},
		{"no rows", header, nil, "", "no rows"},
		{"no from", header, good, "-from=", "from: give the export"},
		{"both", header, good, "-command=true", "give --logits or --command, not both"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logits := writeCSV(t, filepath.Join(tmp, fmt.Sprintf("l%d.csv", i)), tc.header, tc.rows)
			out := filepath.Join(t.TempDir(), "out")
			args := fmt.Sprintf("-from=%s -logits=%s %s", from, logits, tc.args)
			code, msg := launchtest.RunMain(t, args, out)
			lines := strings.Split(strings.TrimSpace(msg), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and one line with %q", code, msg, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was created for a refused input", out)
			}
		})
	}
}

// TestTruthKinds: on every kind with a support, the true log joint as a model's logits
// scores joint, marginal and conditional KL 0 and the AUROC ceiling exactly, beside
// exact jem trained on the same draws.
func TestTruthKinds(t *testing.T) {
	cases := []struct {
		name string
		p    stages.Point
	}{
		{"2-D", stages.Point{Grid: schemas.Grid{Task: "gmm:2,2", Samples: 150, Model: "mlp:8", LR: 0.01, Steps: 20, BatchSize: 32, PxWeight: 1,
			GridCells: 24, Box: 6, TrainGrid: 24}, Tables: 3, Methods: []string{"jem"}}},
		{"binary", stages.Point{Grid: schemas.Grid{Task: "bits:5,3", Components: 2, Samples: 200, Model: "mlp:8", LR: 0.01, Steps: 20,
			BatchSize: 32, PxWeight: 1}, Tables: 3, Methods: []string{"jem"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := writeFrom(t, tc.p)
			sup, _, err := tasks.SupportOf(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			logits := writeCSV(t, filepath.Join(tmp, "truth.csv"), []string{sup.IDColumn, sup.CellColumn, "y", "logit", "model"}, truthRows(t, from, "truth"))
			_, rows := evaluate(t, Config{From: from, Logits: logits, Out: filepath.Join(tmp, "out"), Methods: "jem"})
			n := 0
			for _, r := range rows {
				if r.Method != "external:truth" {
					continue
				}
				n++
				if r.KLJoint > 1e-12 || r.KLMarginal > 1e-12 || r.KLConditional > 1e-12 || r.AUROCPx != r.AUROCTruePx {
					t.Errorf("task %d: the truth scores KL %g/%g/%g, AUROC %v (ceiling %v)", r.TableID, r.KLJoint, r.KLMarginal, r.KLConditional, r.AUROCPx, r.AUROCTruePx)
				}
			}
			if n != 3 {
				t.Errorf("%d runs of the truth model, want 3", n)
			}
		})
	}
}

// TestCommand: --command runs the user's code with the export and a logits path; what it
// writes is evaluated as a --logits file would be.
func TestCommand(t *testing.T) {
	from := writeFrom(t, tablePoint())
	tmp := t.TempDir()
	rows := truthRows(t, from, "")
	for i := range rows {
		rows[i] = rows[i][:4]
	}
	logits := writeCSV(t, filepath.Join(tmp, "truth.csv"), []string{"table_id", "x", "y", "logit"}, rows)
	cmd := fmt.Sprintf(`test -f {export}/config.json && test "$JEMCHECK_EXPORT" = {export} && cp %s {logits}`, logits)
	msg, res := evaluate(t, Config{From: from, Command: cmd, Out: filepath.Join(tmp, "out"), Model: "mine"})
	n := 0
	for _, r := range res {
		if r.Method == "external:mine" {
			n++
			if r.KLJoint > 1e-12 {
				t.Errorf("table %d: KL %g", r.TableID, r.KLJoint)
			}
		}
	}
	if n != 12 || !strings.Contains(msg, "evaluate: running test -f") {
		t.Errorf("%d runs of the command's model, output:\n%s", n, msg)
	}
}

// TestTruthBlocks: on a block task the support is each task's evaluation points; the
// true log density there as a model's logits scores a joint and marginal KL within 4
// standard errors of 0 (the estimates' stated error) and conditional KL 0.
func TestTruthBlocks(t *testing.T) {
	p := stages.Point{Grid: schemas.Grid{Task: "blocks:2,gmm:2,2", Samples: 150, Model: "additive:8", LR: 0.01, Steps: 20, BatchSize: 32,
		PxWeight: 1, GridCells: 24, Box: 6, TrainGrid: 24}, Tables: 2, Methods: []string{"jem"}}
	from := writeFrom(t, p)
	cfg, err := readConfig(context.Background(), from)
	if err != nil {
		t.Fatal(err)
	}
	p = cfg.Points[0]
	spec, err := prob.ParseBlocksSpec(p.Task)
	if err != nil {
		t.Fatal(err)
	}
	g := prob.Grid{G: p.GridCells, Box: p.Box}
	var rows [][]string
	for o := range int64(p.Tables) {
		set, err := blocks.EvalPoints(cfg.Options.Seed, p, o)
		if err != nil {
			t.Fatal(err)
		}
		truth := spec.Draw(tasks.TableSeed(cfg.Options.Seed, tasks.Table{Point: p, Ordinal: o})).Truth(g)
		for i := range set.M + set.N {
			x := set.X[i*set.Dim : (i+1)*set.Dim]
			for y := range p.Classes {
				v := math.Log(truth.Prior[y]) - set.LogVol
				for b := range set.Dim / 2 {
					v += math.Log(truth.Cond[b][g.Cell(x[2*b], x[2*b+1])*p.Classes+y])
				}
				rows = append(rows, []string{fmt.Sprint(o), fmt.Sprint(i), fmt.Sprint(y), strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	tmp := t.TempDir()
	logits := writeCSV(t, filepath.Join(tmp, "truth.csv"), []string{"task_id", "point", "y", "logit"}, rows)
	_, res := evaluate(t, Config{From: from, Logits: logits, Out: filepath.Join(tmp, "out"), Methods: "jem", Model: "truth"})
	n := 0
	for _, r := range res {
		if r.Method != "external:truth" {
			continue
		}
		n++
		if !(math.Abs(r.KLJoint) <= 4*r.KLJointISSE) || !(math.Abs(r.KLMarginal) <= 4*r.KLMarginalSE+1e-9) || math.Abs(r.KLConditional) > 1e-9 {
			t.Errorf("task %d: the truth scores KL %v ± %v, marginal %v ± %v, conditional %v", r.TableID, r.KLJoint, r.KLJointISSE,
				r.KLMarginal, r.KLMarginalSE, r.KLConditional)
		}
	}
	if n != 2 {
		t.Errorf("%d runs of the truth model, want 2", n)
	}
}

// TestShellCommandQuoting: whatever the folder's name and wherever the user puts a
// placeholder (bare, in double quotes, in single quotes), the command sees the path
// exactly, and no part of it runs as shell code.
func TestShellCommandQuoting(t *testing.T) {
	names := []string{
		"plain",
		"x;touch PWNED;",
		"x $(touch PWNED)",
		"x `touch PWNED`",
		`x'q"d`,
		"x\ntouch PWNED\n",
		"x\"; touch PWNED; \"",
		"x'; touch PWNED; '",
		"x*?[a] ~ $HOME ${IFS} \\",
		"-n",
	}
	templates := map[string]string{
		"bare":          `printf '%s' {export}`,
		"double quoted": `printf '%s' "{export}"`,
		"single quoted": `printf '%s' '{export}'`,
		"mixed":         `printf '%s' "a{export}b"'c{export}d'{export}`,
	}
	want := map[string]func(n string) string{
		"bare":          func(n string) string { return n },
		"double quoted": func(n string) string { return n },
		"single quoted": func(n string) string { return n },
		"mixed":         func(n string) string { return "a" + n + "bc" + n + "d" + n },
	}
	for _, name := range names {
		for tn, tmpl := range templates {
			t.Run(fmt.Sprintf("%s/%q", tn, name), func(t *testing.T) {
				dir := t.TempDir()
				export := filepath.Join(dir, name)
				cmd := exec.Command("sh", "-c", shellCommand(tmpl))
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), envExport+"="+export, envLogits+"="+filepath.Join(dir, "l.csv"))
				got, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s: %v", shellCommand(tmpl), err)
				}
				// Unquoted, a bare placeholder is still one quoted word; the only
				// difference allowed is none.
				if string(got) != want[tn](export) {
					t.Errorf("the command saw %q, want %q (shell text %s)", got, want[tn](export), shellCommand(tmpl))
				}
				if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
					t.Errorf("the folder name ran as code: PWNED created")
				}
			})
		}
	}
}

// copyExport copies the export folder from into a new folder named name.
func copyExport(t *testing.T, from, name string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(from, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestCommandHostileExport: an export folder whose name holds shell syntax is evaluated
// like any other (the review's D1: `ls {export}` ran `touch PWNED`); config.json
// records the command's template and the logits' sha256.
func TestCommandHostileExport(t *testing.T) {
	base := writeFrom(t, tablePoint())
	tmp := t.TempDir()
	rows := truthRows(t, base, "")
	for i := range rows {
		rows[i] = rows[i][:4]
	}
	logits := writeCSV(t, filepath.Join(tmp, "truth.csv"), []string{"table_id", "x", "y", "logit"}, rows)
	for _, name := range []string{"exp;touch PWNED1;", "exp $(touch PWNED2)", "exp`touch PWNED3`'\""} {
		t.Run(name, func(t *testing.T) {
			from := copyExport(t, base, name)
			work := t.TempDir()
			t.Chdir(work)
			cmd := fmt.Sprintf(`ls {export} >/dev/null && test -f "{export}/config.json" && cp %s {logits}`, logits)
			out := filepath.Join(tmp, fmt.Sprintf("out%d", len(name)))
			evaluate(t, Config{From: from, Command: cmd, Out: out, Model: "mine"})
			if ents, _ := os.ReadDir(work); len(ents) > 0 {
				t.Errorf("the command created %v in its working folder", ents)
			}
			if ents, _ := filepath.Glob(filepath.Join(filepath.Dir(from), "PWNED*")); len(ents) > 0 {
				t.Errorf("the command created %v", ents)
			}
			cfg, err := os.ReadFile(filepath.Join(out, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(mustRead(t, logits))
			for _, w := range []string{`"command": "ls {export} `, hex.EncodeToString(sum[:]), `"logits_sha256"`} {
				if !strings.Contains(string(cfg), w) {
					t.Errorf("config.json does not record %s:\n%s", w, cfg)
				}
			}
		})
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestCommandChecks: the command runs only after --out is checked (D3: it ran first,
// then the run was refused), and a command that overruns --command_timeout is stopped,
// its temporary folder removed and --out's lock released.
func TestCommandChecks(t *testing.T) {
	from := writeFrom(t, tablePoint())
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	marker := filepath.Join(tmp, "ran")
	userDir := filepath.Join(tmp, "user")
	os.MkdirAll(userDir, 0o755)
	os.WriteFile(filepath.Join(userDir, "notes.txt"), []byte("mine"), 0o644)
	cases := []struct {
		name, cmd, out string
		timeout        time.Duration
		want           string
		ran            bool
	}{
		{"--out not empty", "touch " + marker, userDir, 0, "is not empty", false},
		{"timeout", "touch " + marker + "; sleep 30", filepath.Join(tmp, "o2"), 500 * time.Millisecond, "did not finish within --command_timeout=500ms", true},
		{"no logits", "true", filepath.Join(tmp, "o3"), 0, "wrote no logits", false},
		{"fails", "exit 3", filepath.Join(tmp, "o4"), 0, "exit status 3", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(marker)
			start := time.Now()
			var buf bytes.Buffer
			err := run(context.Background(), Config{From: from, Command: c.cmd, Out: c.out, CommandTimeout: c.timeout,
				Methods: "baseline,jem", Model: "external", Stdout: &buf}, &buf)
			if err == nil || !errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want bad input with %q\n%s", err, c.want, buf.String())
			}
			if _, serr := os.Stat(marker); (serr == nil) != c.ran {
				t.Errorf("command ran: %v, want %v", serr == nil, c.ran)
			}
			if time.Since(start) > 15*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "jemcheck-logits-*")); len(left) > 0 {
				t.Errorf("temporary folders left: %v", left)
			}
			if c.out != userDir {
				if _, err := os.Stat(c.out); !os.IsNotExist(err) {
					t.Errorf("%s left behind (lock not released?): %v", c.out, err)
				}
			}
		})
	}
}

// TestCommandSignal: SIGTERM or SIGINT while the command runs ends its whole process
// group (a background child too), removes the temporary folder, releases the lock,
// prints one line and exits 143 or 130 (D2: no message, orphaned child, leaked folder).
func TestCommandSignal(t *testing.T) {
	from := writeFrom(t, tablePoint())
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			pidFile := filepath.Join(tmp, "child.pid")
			script := filepath.Join(tmp, "train.sh")
			os.WriteFile(script, []byte("#!/bin/sh\nsleep 60 &\necho $! > "+pidFile+"\nwait\n"), 0o755)
			out := filepath.Join(tmp, "out")
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), launchtest.EnvArgs+"=--from="+from+" --command="+script+" --out="+out, "TMPDIR="+tmp)
			var msg bytes.Buffer
			cmd.Stdout, cmd.Stderr = &msg, &msg
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var child int
			for i := 0; i < 200 && child == 0; i++ {
				time.Sleep(50 * time.Millisecond)
				if b, err := os.ReadFile(pidFile); err == nil {
					child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
			}
			if child == 0 {
				cmd.Process.Kill()
				t.Fatalf("the command did not start\n%s", msg.String())
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if want := 128 + int(sig); code != want {
				t.Errorf("exit %d, want %d\n%s", code, want, msg.String())
			}
			lines := strings.Split(strings.TrimSpace(msg.String()), "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, "interrupted by") {
				t.Errorf("last line %q, want the interruption\n%s", last, msg.String())
			}
			gone := false // exited: a zombie waiting for its reaper counts (running, command_test.go)
			for i := 0; i < 100 && !gone; i++ {
				gone = !running(child)
				if !gone {
					time.Sleep(100 * time.Millisecond)
				}
			}
			if !gone {
				syscall.Kill(child, syscall.SIGKILL)
				t.Errorf("the command's child %d outlived evaluate", child)
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "jemcheck-logits-*")); len(left) > 0 {
				t.Errorf("temporary folders left: %v", left)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s left behind (lock not released?)", out)
			}
		})
	}
}

// TestHugeLogitsLine: logits of ±1e308 (an infinite KL on every task) get a line that
// says so, not "+NaN nats … exact jem's own KL NaN" (exact jem's KL was finite).
func TestHugeLogitsLine(t *testing.T) {
	from := writeFrom(t, tablePoint())
	tmp := t.TempDir()
	var rows [][]string
	for _, r := range truthRows(t, from, "huge") {
		v := "1e308"
		if r[2] != "0" {
			v = "-1e308"
		}
		rows = append(rows, []string{r[0], r[1], r[2], v, r[4]})
	}
	logits := writeCSV(t, filepath.Join(tmp, "huge.csv"), []string{"table_id", "x", "y", "logit", "model"}, rows)
	msg, _ := evaluate(t, Config{From: from, Logits: logits, Out: filepath.Join(tmp, "out")})
	line := ""
	for l := range strings.SplitSeq(msg, "\n") {
		if strings.HasPrefix(l, "external:huge: ") {
			line = l
		}
	}
	if line == "" || strings.Contains(line, "NaN") || !strings.Contains(line, "infinite") {
		t.Errorf("the external model's line: %q, want one saying its KL is infinite, without NaN", line)
	}
	t.Log(line)
}
