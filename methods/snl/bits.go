package snl

import (
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/methods/nce"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// bits is the hook tasks/bits calls: snl's objective on binary tables, Z = Σ_x exp ℓ(x)
// over the 2^D states estimated by importance sampling from a product-Bernoulli
// proposal: snl_proposal=gaussian (the default) reads as the one fitted to the draws'
// bit frequencies (clamped to [nce.BitsClamp, 1 − nce.BitsClamp]) mixed with the
// uniform on {0,1}^D at weight Defensive; snl_proposal=uniform, the uniform.
func bits(g schemas.Grid, s *kernel.SpecBits) error {
	var o Options
	methods.Decode(g, &o)
	s.Objective = func() kernel.Objective { return NewObjective(o) }
	return nil
}

// fitBits sets the product-Bernoulli proposal from the draws x [D][n] (bits 0 or 1).
func (s *Objective) fitBits(x [][]float32) {
	s.bern = nce.FitBits(x, nce.BitsClamp)
	s.fitted = true
}

// fillBits is Fill's proposal lanes on binary tables and their log r.
func (s *Objective) fillBits(st *kernel.Step) {
	B, P, D, x := st.B, st.P, st.Dim, st.X
	if s.o.Proposal == "gaussian" && !s.fitted {
		s.fitBits(nce.Draws(st, s.first))
	}
	logU := -float64(D) * math.Ln2
	for j := range P - B {
		p := B + j
		if s.o.Proposal != "gaussian" || st.Rng.Float64() < Defensive {
			for c := range D {
				v := float32(0)
				if st.Rng.Float64() < 0.5 {
					v = 1
				}
				x[c*P+p] = v
			}
		} else {
			s.bern.DrawLane(st.Rng, x, P, p)
		}
		if s.o.Proposal != "gaussian" {
			s.logR[j] = logU
		} else {
			s.logR[j] = logAdd(logDefensive+logU, log1mDefensive+s.bern.LogPmfLane(x, P, p))
		}
	}
}
