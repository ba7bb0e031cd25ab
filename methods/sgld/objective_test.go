package sgld

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// TestReplayBuffer: every step draws distinct slots of the buffer, restarts about
// Reinit of them uniformly on the box (in every coordinate), and writes back exactly the
// drawn slots: with no SGLD steps the buffer keeps every value that was not restarted,
// and a drawn slot holds its chain, which is the step's negative lane; every slot is
// drawn about as often. On the plane and in D = 6.
func TestReplayBuffer(t *testing.T) {
	const B, M, draws = 16, 48, 4000
	for _, D := range []int{2, 6} {
		t.Run(fmt.Sprintf("D=%d", D), func(t *testing.T) {
			o := kernel.SGLDOptions{Steps: 0, Buffer: M, Reinit: 0.25}
			obj := New(o)
			P := obj.Lanes(B, D)
			st := &kernel.Step{B: B, P: P, Dim: D, Box: 2, X: make([]float32, D*P),
				Rng: rand.New(rand.NewPCG(1, 2)), Noise: rand.New(rand.NewPCG(3, 4))}
			obj.Begin(st)
			for i := range obj.buf {
				obj.buf[i] = float32(1000 + i) // outside the box: restarts are recognisable
			}
			fresh, hits := 0, make([]int, M)
			for range draws {
				before := slices.Clone(obj.buf)
				obj.Fill(st)
				seen := map[int32]bool{}
				for p, s := range obj.slots {
					if seen[s] {
						t.Fatalf("slot %d drawn twice in one step", s)
					}
					seen[s] = true
					hits[s]++
					kept, inBox := true, true
					for c := range D {
						v := st.X[c*P+B+p]
						kept = kept && v == before[int(s)*D+c]
						inBox = inBox && v >= -st.Box && v <= st.Box
						if obj.buf[int(s)*D+c] != v {
							t.Fatalf("slot %d holds %v in coordinate %d, want its chain's %v", s, obj.buf[int(s)*D+c], c, v)
						}
					}
					switch {
					case kept:
					case inBox:
						fresh++
					default:
						t.Fatalf("chain %d is neither its slot's value nor a restart in the box", p)
					}
				}
				for s := range M {
					if !seen[int32(s)] && !slices.Equal(obj.buf[s*D:(s+1)*D], before[s*D:(s+1)*D]) {
						t.Fatalf("slot %d written without being drawn", s)
					}
				}
			}
			n := float64(B * draws)
			share := float64(fresh) / n
			if sd := math.Sqrt(0.25 * 0.75 / n); math.Abs(share-0.25) > 5*sd {
				t.Errorf("restart share %v, want 0.25 ± %v", share, 5*sd)
			}
			exp := n / M
			for s, h := range hits {
				if math.Abs(float64(h)-exp) > 6*math.Sqrt(exp) {
					t.Errorf("slot %d drawn %d times, expected %v", s, h, exp)
				}
			}
			t.Logf("restart share %.4f over %d draws", share, int(n))
		})
	}
}
