package prob

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpectedKLSmoothedMany: the block form is ExpectedKLSmoothed table by table, bit
// for bit, over shapes, sample sizes (the exact sums, the series and the p = 1 cells)
// and tables with empty, tiny and dominant cells.
func TestExpectedKLSmoothedMany(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []int{1, 2, 3, 4, 6, 9, 16} {
		for _, n := range []int64{1, 2, 7, 50, 1000, 5000, 100000, 3000000} {
			tables := 37
			ps := make([]float64, 0, tables*c)
			for i := range tables {
				p := make([]float64, c)
				s := 0.0
				for j := range p {
					switch {
					case i%5 == 1 && j == 0:
						p[j] = 0 // an empty cell
					case i%5 == 2 && j == 1%c:
						p[j] = 1e-12 // a tiny one
					case i%5 == 3 && j == 0:
						p[j] = 1e6 // a dominant one
					default:
						p[j] = r.Float64()
					}
					s += p[j]
				}
				for j := range p {
					p[j] /= s
				}
				ps = append(ps, p...)
			}
			for _, a := range []float64{SmoothingAdd, 1} {
				got := ExpectedKLSmoothedMany(ps, c, n, a)
				if len(got) != tables {
					t.Fatalf("c=%d n=%d: %d results for %d tables", c, n, len(got), tables)
				}
				for i := range tables {
					want := ExpectedKLSmoothed(ps[i*c:(i+1)*c], n, a)
					if math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(got[i]) && math.IsNaN(want)) {
						t.Errorf("c=%d n=%d a=%g table %d %v: got %v, ExpectedKLSmoothed %v", c, n, a, i, ps[i*c:(i+1)*c], got[i], want)
					}
				}
			}
		}
	}
}

func TestExpectedKLSmoothedManyPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"a=0":    func() { ExpectedKLSmoothedMany([]float64{1}, 1, 10, 0) },
		"n=0":    func() { ExpectedKLSmoothedMany([]float64{1}, 1, 0, 0.5) },
		"c=0":    func() { ExpectedKLSmoothedMany([]float64{1}, 0, 10, 0.5) },
		"ragged": func() { ExpectedKLSmoothedMany([]float64{0.5, 0.5, 1}, 2, 10, 0.5) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	if got := ExpectedKLSmoothedMany(nil, 4, 10, 0.5); len(got) != 0 {
		t.Errorf("no tables: %v", got)
	}
}

func BenchmarkExpectedKLSmoothedMany(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const tables, c = 4096, 4
	ps := make([]float64, tables*c)
	for i := range tables {
		s := 0.0
		for j := range c {
			ps[i*c+j] = r.Float64()
			s += ps[i*c+j]
		}
		for j := range c {
			ps[i*c+j] /= s
		}
	}
	b.Run("many", func(b *testing.B) {
		for b.Loop() {
			ExpectedKLSmoothedMany(ps, c, 1000, SmoothingAdd)
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			for i := range tables {
				ExpectedKLSmoothed(ps[i*c:(i+1)*c], 1000, SmoothingAdd)
			}
		}
	})
}
