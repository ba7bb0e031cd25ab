package examples

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
)

// python is the interpreter the clients run under (torch from the distribution's
// python3-torch).
const python = "/usr/bin/python3"

// needTorch skips t unless the slow tests are on and python can import torch.
func needTorch(t *testing.T) {
	t.Helper()
	testenv.Slow(t, "trains PyTorch models")
	if err := exec.Command(python, "-c", "import torch, numpy, pandas").Run(); err != nil {
		t.Skipf("%s cannot import torch, numpy and pandas (%v): apt-get install -y python3-torch python3-numpy python3-pandas", python, err)
	}
}

// tinyExport writes an export directory in the layout of jemcheck's export pipeline
// (export.json, config.json, CSV siblings of the Parquet files it names): tasks 2-D tasks of two
// classes, one Gaussian each, n draws per task, a g×g grid of evaluation points over
// [−box, box]².
func tinyExport(t *testing.T, dir string, tasks, n, g int, box float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var samples strings.Builder
	samples.WriteString("task_id,x0,x1,y\n")
	ids := make([]int, tasks)
	for id := range tasks {
		ids[id] = id
		mu := [2][2]float64{{-1.5 + 0.2*float64(id), -1}, {1.5, 1 - 0.2*float64(id)}}
		for range n {
			y := rng.IntN(2)
			fmt.Fprintf(&samples, "%d,%g,%g,%d\n", id, mu[y][0]+0.5*rng.NormFloat64(), mu[y][1]+0.5*rng.NormFloat64(), y)
		}
	}
	var points strings.Builder
	points.WriteString("cell,x0,x1\n")
	h := 2 * box / float64(g)
	for c := range g * g {
		fmt.Fprintf(&points, "%d,%g,%g\n", c, -box+(float64(c/g)+0.5)*h, -box+(float64(c%g)+0.5)*h)
	}
	point := map[string]any{
		"point_id": 0, "kind": "plane", "task": "gmm:2,1", "classes": 2, "dimension": 2, "samples": n, "tasks": tasks, "ids": ids,
		"id_column": "task_id", "support_column": "cell", "support": g * g, "columns": []string{"x0", "x1"}, "grid": g, "box": box,
		"model": "mlp:8,8", "files": map[string]any{"samples": []string{"samples/point-0000-part-00000.parquet"},
			"points": "points/point-0000.parquet", "truth": "truth.parquet"},
	}
	manifest, err := json.MarshalIndent(map[string]any{"format": "jemcheck-export/1", "config": "config.json", "points": []any{point}}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	// The run's configuration: the client takes lr, steps, batch_size and the seed from it.
	config, err := json.Marshal(map[string]any{"options": map[string]any{"seed": 3},
		"points": []any{map[string]any{"point_id": 0, "lr": 0.003, "steps": 1500, "batch_size": 32, "model": "mlp:8,8"}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"export.json":                       string(manifest),
		"config.json":                       string(config),
		"samples/point-0000-part-00000.csv": samples.String(),
		"points/point-0000.csv":             points.String(),
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOfficialJEMClient runs examples/official_jem.py on a tiny export: its logits file
// has evaluate's columns, a row per task (of the first --tasks) × point × class, each
// once, with finite logits.
func TestOfficialJEMClient(t *testing.T) {
	needTorch(t)
	const tasks, used, g, k = 3, 2, 8, 2
	dir := t.TempDir()
	tinyExport(t, dir, tasks, 200, g, 4)
	out := filepath.Join(dir, "logits.csv")
	cmd := exec.Command(python, "official_jem.py", "--export", dir, "--out", out, "--tasks", strconv.Itoa(used),
		"--steps", "30", "--n_steps", "5", "--buffer_size", "500", "--model_name", "tiny")
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("official_jem.py: %v\n%s", err, msg)
	}
	if want := "2 tasks, model [8, 8] K=2, 30 Adam steps lr 0.003 batch 32"; !strings.Contains(string(msg), want) {
		t.Errorf("the client did not take the export's settings (%q):\n%s", want, msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"task_id", "cell", "y", "logit", "model"}; !slices.Equal(rows[0], want) {
		t.Fatalf("columns %v, want %v", rows[0], want)
	}
	if got, want := len(rows)-1, used*g*g*k; got != want {
		t.Fatalf("%d rows, want %d (tasks × cells × classes)", got, want)
	}
	seen := map[[3]int]bool{}
	for i, r := range rows[1:] {
		var key [3]int
		for j := range key {
			if key[j], err = strconv.Atoi(r[j]); err != nil {
				t.Fatalf("row %d: %v", i+1, err)
			}
		}
		v, err := strconv.ParseFloat(r[3], 64)
		switch {
		case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
			t.Fatalf("row %d: logit %q is not finite", i+1, r[3])
		case key[0] < 0 || key[0] >= used || key[1] < 0 || key[1] >= g*g || key[2] < 0 || key[2] >= k:
			t.Fatalf("row %d: task, cell, class %v out of range", i+1, key)
		case seen[key]:
			t.Fatalf("row %d: task, cell, class %v twice", i+1, key)
		case r[4] != "tiny":
			t.Fatalf("row %d: model %q, want tiny", i+1, r[4])
		}
		seen[key] = true
	}
}

// TestOfficialJEMBatches: the client's minibatches are --batch_size draws each, every
// draw once per epoch (an epoch boundary inside a batch included).
func TestOfficialJEMBatches(t *testing.T) {
	needTorch(t)
	const check = `
import torch, official_jem as o
b = o.Batches(10, 4, torch.Generator().manual_seed(0))
got = [b.next().tolist() for _ in range(5)]
assert all(len(x) == 4 for x in got), got
flat = sum(got, [])
assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10)), got
`
	if msg, err := exec.Command(python, "-c", check).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
}
