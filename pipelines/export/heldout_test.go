package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	"github.com/jemcheck/jemcheck/tasks/blocks"
	"github.com/jemcheck/jemcheck/tasks/images"
	"github.com/parquet-go/parquet-go"
)

// exportOf runs the export command with args into a new folder and returns it with
// its export.json's one point.
func exportOf(t *testing.T, args string) (string, schemas.ExportPoint) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "export")
	if code, msg := launchtest.RunMain(t, args, out); code != 0 {
		t.Fatalf("export %s: exit %d\n%s", args, code, msg)
	}
	var ex schemas.Export
	if err := json.Unmarshal(mustRead(t, filepath.Join(out, "export.json")), &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Points) != 1 {
		t.Fatalf("export.json: %d points", len(ex.Points))
	}
	return out, ex.Points[0]
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// heldRow is what the held-out check reads of any kind's samples: the task, the draw
// (blocks and images; else the row's place among its task's rows) and the marker.
type heldRow struct{ TableID, TaskID, Draw, Heldout int64 }

// readHeld reads the held-out check's columns of a samples file of the kind.
func readHeld(t *testing.T, kind string, data []byte) []heldRow {
	t.Helper()
	var out []heldRow
	var err error
	switch kind {
	case "table", "bits":
		var rs []schemas.SampleRow
		rs, err = parquet.Read[schemas.SampleRow](bytes.NewReader(data), int64(len(data)))
		for _, r := range rs {
			out = append(out, heldRow{TableID: r.TableID, Heldout: r.Heldout})
		}
	case "blocks":
		var rs []blocks.SampleRow
		rs, err = parquet.Read[blocks.SampleRow](bytes.NewReader(data), int64(len(data)))
		for _, r := range rs {
			out = append(out, heldRow{TaskID: r.TaskID, Draw: r.Draw, Heldout: r.Heldout})
		}
	case "images":
		var rs []images.SampleRow
		rs, err = parquet.Read[images.SampleRow](bytes.NewReader(data), int64(len(data)))
		for _, r := range rs {
			out = append(out, heldRow{TaskID: r.TaskID, Draw: r.Draw, Heldout: r.Heldout})
		}
	default:
		var rs []schemas.SampleRow2D
		rs, err = parquet.Read[schemas.SampleRow2D](bytes.NewReader(data), int64(len(data)))
		for _, r := range rs {
			out = append(out, heldRow{TaskID: r.TaskID, Heldout: r.Heldout})
		}
	}
	if err != nil {
		t.Fatalf("%s samples: %v", kind, err)
	}
	return out
}

// TestExportHeldout: the samples of every kind an export writes carry the protocol's
// held-out marker, and export.json states the split: on 2-D, block and images tasks the
// last ⌈N·holdout⌉ draws of each task (in draw order) are marked 1, exactly the draws
// the kinds hold out of training (tasks.Options.HoldoutSplit); tables train on every
// draw, so every row is 0 and the split says so. --holdout moves it.
func TestExportHeldout(t *testing.T) {
	cases := []struct {
		name, args string
		train      int // draws per task trained on
		perDraw    int // rows per draw (blocks: one per block)
	}{
		{"tables", "-tables=3 -samples=40", 40, 1},
		{"binary", "-task=bits:4,2 -tables=2 -samples=40", 32, 1},
		{"2-D", "-task=gmm:2,2 -tables=2 -samples=40", 32, 1},
		{"2-D, holdout 0.3", "-task=moons:0.1 -tables=2 -samples=41 -holdout=0.3", 28, 1}, // ⌈41·0.3⌉ = 13 held out
		{"blocks", "-task=blocks:2,gmm:2,1 -tables=2 -samples=40", 32, 2},
		{"images", "-task=images:8,2 -tables=2 -samples=40", 32, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, ep := exportOf(t, tc.args)
			sp := ep.Split
			if sp.Column != "heldout" || sp.Train != tc.train || sp.HeldOut != ep.Samples-tc.train || (sp.HeldOut > 0) != (sp.Holdout > 0) ||
				!strings.Contains(sp.About, "heldout") {
				t.Errorf("export.json split %+v, want %d of %d draws trained on", sp, tc.train, ep.Samples)
			}
			if !slices.Contains(ep.Files.SamplesColumns, "heldout") {
				t.Errorf("samples_columns %v has no heldout", ep.Files.SamplesColumns)
			}
			rows := 0
			seen := map[int64]int{} // rows of each task so far
			for _, key := range ep.Files.Samples {
				rs := readHeld(t, ep.Kind, mustRead(t, filepath.Join(out, key)))
				for _, r := range rs {
					id := r.TableID + r.TaskID
					j := seen[id] / tc.perDraw
					if tc.perDraw > 1 || tc.name == "images" {
						j = int(r.Draw)
					}
					seen[id]++
					want := int64(0)
					if j >= tc.train {
						want = 1
					}
					if r.Heldout != want {
						t.Fatalf("task %d draw %d: heldout %d, want %d (first %d trained on)", id, j, r.Heldout, want, tc.train)
					}
					rows++
				}
			}
			if want := ep.Tasks * ep.Samples * tc.perDraw; rows != want {
				t.Errorf("%d sample rows, want %d", rows, want)
			}
			// The split is the one the kinds train on.
			var o tasks.Options
			if err := json.Unmarshal(mustRead(t, filepath.Join(out, "config.json")), &struct {
				Options *tasks.Options `json:"options"`
			}{&o}); err != nil {
				t.Fatal(err)
			}
			if o.Select != "" && o.HoldoutSplit(ep.Samples) != tc.train {
				t.Errorf("config.json: select %q holdout %v trains on %d draws, export.json says %d", o.Select, o.Holdout, o.HoldoutSplit(ep.Samples), tc.train)
			}
		})
	}
}

// npy is an array read from a .npy member by the reader below, written here from the
// format's description (not jemcheck's writer): magic, version 1.0, header dict, data.
type npy struct {
	descr string
	shape []int
	data  []byte
}

var npyDict = regexp.MustCompile(`^\{'descr': '([<|][a-z][0-9])', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`)

func readNPY(t *testing.T, b []byte) npy {
	t.Helper()
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" || b[6] != 1 || b[7] != 0 {
		t.Fatalf("not an .npy 1.0 file: % x", b[:min(10, len(b))])
	}
	n := int(binary.LittleEndian.Uint16(b[8:10]))
	if (10+n)%64 != 0 || 10+n > len(b) {
		t.Fatalf("header length %d: not 64-aligned or past the file", n)
	}
	m := npyDict.FindStringSubmatch(string(b[10 : 10+n]))
	if m == nil {
		t.Fatalf("header %q", b[10:10+n])
	}
	a := npy{descr: m[1], data: b[10+n:]}
	for _, f := range strings.Split(m[2], ",") {
		if f = strings.TrimSpace(f); f != "" {
			d, _ := strconv.Atoi(f)
			a.shape = append(a.shape, d)
		}
	}
	size := map[string]int{"<f8": 8, "<i8": 8, "|b1": 1}[a.descr]
	count := 1
	for _, d := range a.shape {
		count *= d
	}
	if size == 0 || count*size != len(a.data) {
		t.Fatalf("%s %v: %d bytes of data", a.descr, a.shape, len(a.data))
	}
	return a
}

func (a npy) f8(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(a.data[8*i:])) }
func (a npy) i8(i int) int64   { return int64(binary.LittleEndian.Uint64(a.data[8*i:])) }

// TestExportImages: an images task's .npz file holds, under the names and shapes
// export.json gives, the task's draws as the samples/ Parquet file has them (pixel for
// pixel, with the same classes and held-out marker), the evaluation draws with the
// truth's log p(x, y), and the truth's parameters; the files' names are deterministic
// and an export of the same flags writes the same bytes.
func TestExportImages(t *testing.T) {
	const args = "-task=images:8,2 -tables=2 -samples=30"
	out, ep := exportOf(t, args)
	if ep.Kind != "images" || len(ep.Files.Arrays) != 2 || ep.ONNX == nil || !strings.Contains(ep.ONNX.Evaluate, "{task}") || ep.Files.Points != "" {
		t.Fatalf("export.json point: %+v", ep)
	}
	data := mustRead(t, filepath.Join(out, ep.Files.Samples[0]))
	samples, err := parquet.Read[images.SampleRow](bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range ep.Files.Arrays {
		if want := fmt.Sprintf("arrays/point-0000-task-%06d.npz", ep.IDs[i]); key != want {
			t.Errorf("array file %q, want %q", key, want)
		}
		z, err := zip.OpenReader(filepath.Join(out, key))
		if err != nil {
			t.Fatal(err)
		}
		arrays := map[string]npy{}
		var names []string
		for _, f := range z.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(f.Name, ".npy")
			arrays[name] = readNPY(t, b)
			names = append(names, name)
		}
		z.Close()
		for name := range ep.Files.ArraysAbout {
			if _, ok := arrays[name]; !ok && name != "truth_formula" {
				t.Errorf("%s: no array %s (export.json describes it)", key, name)
			}
		}
		shapes := map[string][]int{"task_id": nil, "x": {30, 8, 8}, "y": {30}, "heldout": {30}, "eval_x": {images.MCDraws, 8, 8},
			"eval_y": {images.MCDraws}, "eval_log_joint": {images.MCDraws, 2}, "truth_pi": {2}}
		for name, want := range shapes {
			if a := arrays[name]; !slices.Equal(a.shape, want) {
				t.Errorf("%s: %s has shape %v, want %v (arrays %v)", key, name, a.shape, want, names)
			}
		}
		if arrays["task_id"].i8(0) != ep.IDs[i] || arrays["heldout"].descr != "|b1" {
			t.Errorf("%s: task_id %d, heldout %s", key, arrays["task_id"].i8(0), arrays["heldout"].descr)
		}
		j := 0
		for _, r := range samples {
			if r.TaskID != ep.IDs[i] {
				continue
			}
			x, y, h := arrays["x"], arrays["y"], arrays["heldout"]
			if y.i8(j) != r.Y || int64(h.data[j]) != r.Heldout || (j >= ep.Split.Train) != (h.data[j] == 1) {
				t.Fatalf("%s draw %d: y %d heldout %d, the samples have %d, %d", key, j, y.i8(j), h.data[j], r.Y, r.Heldout)
			}
			for k, v := range r.X {
				if x.f8(j*64+k) != v {
					t.Fatalf("%s draw %d pixel %d: %v, the samples have %v", key, j, k, x.f8(j*64+k), v)
				}
			}
			j++
		}
		if j != 30 {
			t.Errorf("%s: %d draws matched, want 30", key, j)
		}
		C := arrays["truth_class"].shape[0]
		if s := arrays["truth_loadings"].shape; len(s) != 3 || s[0] != C || s[1] != 64 || !slices.Equal(arrays["truth_mean"].shape, []int{C, 8, 8}) {
			t.Errorf("%s: truth_loadings %v, truth_mean %v for %d components", key, s, arrays["truth_mean"].shape, C)
		}
	}
	again, _ := exportOf(t, args)
	for _, key := range ep.Files.Arrays {
		if !bytes.Equal(mustRead(t, filepath.Join(out, key)), mustRead(t, filepath.Join(again, key))) {
			t.Errorf("%s differs between two exports of the same flags", key)
		}
	}
}

// TestExportImagesNumpy: numpy reads an images export without jemcheck: np.load gives
// the arrays, the training draws the model is to train on are x[heldout == False], and
// the truth's parameters reproduce eval_log_joint (the density written out by hand from
// export.json's formula, to 1e-9). JEMCHECK_SLOW=1 (runs /usr/bin/python3 with numpy).
func TestExportImagesNumpy(t *testing.T) {
	testenv.Slow(t, "python3 with numpy")
	out, ep := exportOf(t, "-task=images:8,3 -tables=2 -samples=50")
	script := `
import json, sys
import numpy as np
exp = sys.argv[1]
p = json.load(open(exp + "/export.json"))["points"][0]
for name in p["files"]["arrays"]:
    z = np.load(exp + "/" + name)
    x, held = z["x"], z["heldout"]
    assert x.shape == (50, 8, 8) and held.dtype == bool, (x.shape, held.dtype)
    assert (~held).sum() == p["split"]["train"] and not held[: p["split"]["train"]].any(), held
    X = z["eval_x"][:200].reshape(200, -1)
    lj = np.full((200, len(z["truth_pi"])), -np.inf)
    for c, y in enumerate(z["truth_class"]):
        L = z["truth_loadings"][c]
        cov = L @ L.T + np.diag(z["truth_psi"][c].ravel())
        r = X - z["truth_mean"][c].ravel()
        q = np.einsum("ij,ij->i", r @ np.linalg.inv(cov), r)
        logdet = np.linalg.slogdet(cov)[1]
        lj[:, y] = np.logaddexp(lj[:, y], np.log(z["truth_pi"][y] * z["truth_weight"][c]) - 0.5 * (q + logdet + X.shape[1] * np.log(2 * np.pi)))
    err = np.abs(lj - z["eval_log_joint"][:200]).max()
    assert err < 1e-9, err
    print(name, int(z["task_id"]), "train", int((~held).sum()), "max |log p - eval_log_joint|", err)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, out)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, msg)
	}
	t.Logf("%s", msg)
	if strings.Count(string(msg), "max |log p") != len(ep.Files.Arrays) {
		t.Errorf("numpy read %q, want %d files", msg, len(ep.Files.Arrays))
	}
}
