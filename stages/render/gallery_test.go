package render

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// inputGallery is one 2-D task (G=8, K=2) with chains of two methods at steps 0 and 10.
func inputGallery() Input {
	const g, box = 8, 3.0
	in := Input{Title: "2-D gallery"}
	t := Task2D{PointID: 3, TaskID: 40, Ordinal: 0, Task: "gmm:2,2", G: g, Box: box, K: 2,
		True:       gridJoint(g, box, []gauss2D{{-1, 0, 0.6, 0.5}, {1, 0.5, 0.5, 0.5}}),
		Frames:     map[string][][]float32{},
		FrameSteps: []int{0, 10}}
	r := rand.New(rand.NewPCG(1, 2))
	for _, m := range []string{"sgld", "jem"} {
		var f0, f1 []float32
		for n := 0; n < 1000; n++ {
			f0 = append(f0, float32(box*(2*r.Float64()-1)), float32(box*(2*r.Float64()-1)))
			f1 = append(f1, float32(-1+0.5*r.NormFloat64()), float32(0.5*r.NormFloat64()))
		}
		f1[0] = 9 // outside the box
		t.Frames[m] = [][]float32{f0, f1}
	}
	in.Tasks2D = []Task2D{t}
	return in
}

// TestSamplesGallery: the gallery is drawn without warnings, listed by FigureNames
// right after its task figure, parses as XML and renders the same bytes twice.
func TestSamplesGallery(t *testing.T) {
	in := inputGallery()
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	html := string(out["report.html"])
	if strings.Contains(html, "could not be drawn") {
		t.Fatalf("figure warnings:\n%s", html)
	}
	svg, ok := out["figures/samples_p3_t0.svg"]
	if !ok {
		t.Fatalf("no samples_p3_t0 in %v", svgNames(out))
	}
	checkXML(t, "samples_p3_t0", svg)
	for _, want := range []string{"jem, step 0", "jem, step 10", "sgld, step 0", "sgld, step 10"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("no panel title %q", want)
		}
	}
	if !strings.Contains(html, `<figure id="samples_p3_t0">`) {
		t.Errorf("the gallery is not in the report")
	}
	names := FigureNames(in)
	i := slices.Index(names, "task2d_p3_t0")
	if i < 0 || i+1 >= len(names) || names[i+1] != "samples_p3_t0" {
		t.Errorf("FigureNames %v: want samples_p3_t0 right after task2d_p3_t0", names)
	}
	got := svgNames(out)
	slices.Sort(names)
	if !slices.Equal(got, names) {
		t.Errorf("figures %v, FigureNames %v", got, names)
	}
	again, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sortedKeys(again), sortedKeys(out)) {
		t.Fatalf("keys differ: %v vs %v", sortedKeys(again), sortedKeys(out))
	}
	for k := range out {
		if !bytes.Equal(out[k], again[k]) {
			t.Errorf("%s differs between renders", k)
		}
	}
}
