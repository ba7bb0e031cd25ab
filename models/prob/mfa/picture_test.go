package mfa

import (
	"flag"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

var updatePicture = flag.Bool("update_picture", false, "write docs/images/mfa-s16.png")

// picturePath is docs/images/mfa-s16.png relative to this package's directory.
var picturePath = filepath.Join("..", "..", "..", "docs", "images", "mfa-s16.png")

// drawGrid renders rows of S×S images (intensity 0 → black, 1 → white, clamped) at
// zoom× with a gap between tiles and a wider gap after the first column.
func drawGrid(rows [][][]float64, S, zoom, gap int) *image.Gray {
	cols := len(rows[0])
	tile := S*zoom + gap
	W := cols*tile + gap + 2*gap
	H := len(rows)*tile + gap
	img := image.NewGray(image.Rect(0, 0, W, H))
	for i := range img.Pix {
		img.Pix[i] = 96 // grey frame
	}
	for r, row := range rows {
		for c, x := range row {
			ox := gap + c*tile
			if c > 0 {
				ox += 2 * gap
			}
			oy := gap + r*tile
			for i := range S * zoom {
				for j := range S * zoom {
					v := x[(i/zoom)*S+j/zoom]
					v = math.Max(0, math.Min(1, v))
					img.SetGray(ox+j, oy+i, color.Gray{Y: uint8(math.Round(255 * v))})
				}
			}
		}
	}
	return img
}

// TestPicture builds the grid of draws shown in the docs (rows: classes; first column:
// the class mean image, then exact draws); with -update_picture it writes the PNG.
func TestPicture(t *testing.T) {
	const S, K, draws = 16, 7, 10
	tr := mustNew(t, 2026, DefaultSpec(S, K))
	rng := prob.NewRand(prob.Seed(2026, 1))
	rows := make([][][]float64, K)
	for y := range K {
		rows[y] = append(rows[y], tr.ClassMean(y))
		for range draws {
			x := make([]float64, tr.D())
			tr.SampleClass(rng, y, x)
			rows[y] = append(rows[y], x)
		}
	}
	img := drawGrid(rows, S, 4, 3)
	if b := img.Bounds(); b.Dx() < (draws+1)*S*4 || b.Dy() < K*S*4 {
		t.Fatalf("picture %v too small", b)
	}
	if !*updatePicture {
		return
	}
	if err := os.MkdirAll(filepath.Dir(picturePath), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(picturePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", picturePath)
}
