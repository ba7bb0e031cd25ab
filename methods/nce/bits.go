package nce

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// BitsClamp keeps a fitted product-Bernoulli's probabilities in [BitsClamp,
// 1 − BitsClamp]: every state of {0,1}^D keeps a noise probability of at least
// BitsClamp^D, so that no state the model may put mass on is out of the noise's
// reach (a bit the draws never set is still drawn 5% of the time).
const BitsClamp = 0.05

// BitsNoise is a product of Bernoulli distributions on {0,1}^D: bit c is 1 with
// probability P[c].
type BitsNoise struct {
	P            []float64
	logP, logNot []float64 // log P[c], log(1 − P[c])
}

// UniformBits is the uniform distribution on {0,1}^D (every P[c] = ½).
func UniformBits(D int) BitsNoise {
	p := make([]float64, D)
	for c := range p {
		p[c] = 0.5
	}
	return NewBitsNoise(p)
}

// NewBitsNoise is the product of Bernoullis of probabilities p (each in (0, 1); kept).
func NewBitsNoise(p []float64) BitsNoise {
	n := BitsNoise{P: p, logP: make([]float64, len(p)), logNot: make([]float64, len(p))}
	for c, v := range p {
		n.logP[c], n.logNot[c] = math.Log(v), math.Log1p(-v)
	}
	return n
}

// FitBits is the product of Bernoullis of the draws' bit frequencies (x[c][i] is bit
// c, 0 or 1, of draw i), each clamped to [clamp, 1 − clamp].
func FitBits(x [][]float32, clamp float64) BitsNoise {
	p := make([]float64, len(x))
	for c, xc := range x {
		var s float64
		for _, v := range xc {
			s += float64(v)
		}
		p[c] = min(max(s/float64(len(xc)), clamp), 1-clamp)
	}
	return NewBitsNoise(p)
}

// DrawLane writes one draw into lane p of the lanes x [D][P] (bit c is 1 where a
// uniform of rng is below P[c]).
func (n *BitsNoise) DrawLane(rng *rand.Rand, x []float32, P, p int) {
	for c, pc := range n.P {
		v := float32(0)
		if rng.Float64() < pc {
			v = 1
		}
		x[c*P+p] = v
	}
}

// LogPmfLane is log pn of the state in lane p of the lanes x [D][P] (a coordinate > ½
// is bit 1).
func (n *BitsNoise) LogPmfLane(x []float32, P, p int) float64 {
	var s float64
	for c := range n.P {
		if x[c*P+p] > 0.5 {
			s += n.logP[c]
		} else {
			s += n.logNot[c]
		}
	}
	return s
}

// bits is the hook tasks/bits calls: nce's objective on binary tables, the noise a
// product of Bernoullis: nce_noise=gaussian (the default) reads as the one fitted to
// the draws' bit frequencies (the moments a binary table has: its means), clamped to
// [BitsClamp, 1 − BitsClamp]; nce_noise=uniform, the uniform on {0,1}^D.
// nce_inflate does not apply and is refused unless 1.
func bits(g schemas.Grid, s *kernel.SpecBits) error {
	var o Options
	methods.Decode(g, &o)
	if err := o.check(); err != nil {
		return err
	}
	if o.Inflate != 1 {
		return fmt.Errorf("nce_inflate=%v does not apply on binary tables (the noise there is a product of Bernoullis: the draws' bit frequencies, or uniform); leave it at 1", o.Inflate)
	}
	s.Objective = func() kernel.Objective { return New(o) }
	return nil
}

// fillBits is Fill on binary lanes: the noise is the product of Bernoullis (fitted or
// uniform) and lpn its log(ν pn).
func (e *Objective) fillBits(st *kernel.Step, logNu float64) {
	B, P := st.B, st.P
	if !e.ready && !e.Fixed {
		if e.o.Noise == NoiseUniform {
			e.Bits = UniformBits(st.Dim)
		} else {
			e.Bits = FitBits(Draws(st, e.first), BitsClamp)
		}
	}
	for p := range P {
		if p >= B {
			e.Bits.DrawLane(st.Rng, st.X, P, p)
		}
		e.lpn[p] = logNu + e.Bits.LogPmfLane(st.X, P, p)
	}
}
