package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// cellLogitsScalar is CellLogits as one math.Exp per node: the rule's definition.
func cellLogitsScalar(t *testing.T, hidden []int, k int, theta []float32, G int, box float64) []float64 {
	off, w := prob.CellRule()
	S := len(off)
	h := 2 * box / float64(G)
	n := G * S
	coords := make([]float64, n)
	for i := range G {
		for a, o := range off {
			coords[i*S+a] = -box + (float64(i)+o)*h
		}
	}
	f, err := PointLogits(hidden, k, theta, n, func(p int) (float64, float64) { return coords[p/n], coords[p%n] })
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, G*G*k)
	for i := range G {
		for j := range G {
			for y := range k {
				m := math.Inf(-1)
				for a := range S {
					for b := range S {
						m = max(m, f[((i*S+a)*n+j*S+b)*k+y])
					}
				}
				s := 0.0
				for a := range S {
					for b := range S {
						s += w[a] * w[b] * math.Exp(f[((i*S+a)*n+j*S+b)*k+y]-m)
					}
				}
				out[(i*G+j)*k+y] = m + math.Log(s)
			}
		}
	}
	return out
}

// TestCellLogitsMatchesScalar: CellLogits (its exps in vector lanes, prob.ExpTo) is the
// rule's scalar definition bit for bit, for small and huge parameters (a cell whose
// nodes' logits differ by more than 745 nats underflows some exps to 0).
func TestCellLogitsMatchesScalar(t *testing.T) {
	for _, c := range []struct {
		name   string
		hidden []int
		k, G   int
		scale  float32
	}{
		{"mlp 8, K 3, 16 cells", []int{8}, 3, 16, 1},
		{"mlp 32,32, K 2, 32 cells", []int{32, 32}, 2, 32, 1},
		{"huge weights", []int{16}, 4, 8, 400},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(c.k)))
			theta := make([]float32, NumParams2D(c.hidden, c.k))
			for i := range theta {
				theta[i] = c.scale * float32(rng.NormFloat64())
			}
			got, err := CellLogits(c.hidden, c.k, theta, c.G, 4)
			if err != nil {
				t.Fatal(err)
			}
			want := cellLogitsScalar(t, c.hidden, c.k, theta, c.G, 4)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("cell-class %d: %v, the scalar rule %v", i, got[i], want[i])
				}
			}
		})
	}
}
