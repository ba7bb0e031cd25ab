package mfa

import (
	"fmt"
	"math"
)

// Params is the complete, JSON-serialisable description of a truth: with it a user can
// recompute the density independently of this package,
//
//	p(x, y) = Pi[y] · Σ_c Classes[y].Components[c].Weight · N(x; Mean, Λ Λᵀ + diag Psi),
//
// where Λ is the D×Factors matrix Loadings in row-major order (Λ[i][j] = Loadings[i*Factors+j])
// and pixel (row r, column c) of an S×S image is x[r*S+c].
type Params struct {
	S       int           `json:"s"`
	K       int           `json:"k"`
	Pi      []float64     `json:"pi"`
	Classes []ClassParams `json:"classes"`
	// Seed and Spec record how New made the truth; FromParams ignores them.
	Seed uint64 `json:"seed,omitempty"`
	Spec *Spec  `json:"spec,omitempty"`
}

// ClassParams is one class: a mixture of factor analysers.
type ClassParams struct {
	// Shape names the procedural shape New drew for the class (informational).
	Shape      string            `json:"shape,omitempty"`
	Components []ComponentParams `json:"components"`
}

// ComponentParams is one factor analyser N(Mean, Λ Λᵀ + diag Psi).
type ComponentParams struct {
	Weight   float64   `json:"weight"`
	Factors  int       `json:"factors"`
	Mean     []float64 `json:"mean"`     // D
	Loadings []float64 `json:"loadings"` // D×Factors, row-major
	Psi      []float64 `json:"psi"`      // D, all > 0
}

// maxParamsFactors bounds a component's latent dimension in FromParams.
const maxParamsFactors = 256

// sumTol is how far the class and component weights may sum from 1.
const sumTol = 1e-9

func finiteAll(v []float64) int {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return i
		}
	}
	return -1
}

// Validate reports the first thing wrong with p, or nil.
func (p *Params) Validate() error {
	if p.S < 1 || p.S > 4*MaxS {
		return fmt.Errorf("mfa: params: image side S = %d out of range [1, %d]", p.S, 4*MaxS)
	}
	if p.K < 1 {
		return fmt.Errorf("mfa: params: K = %d classes, need at least 1", p.K)
	}
	D := p.S * p.S
	if len(p.Pi) != p.K {
		return fmt.Errorf("mfa: params: len(pi) = %d, want K = %d", len(p.Pi), p.K)
	}
	if len(p.Classes) != p.K {
		return fmt.Errorf("mfa: params: %d classes, want K = %d", len(p.Classes), p.K)
	}
	var sum float64
	for y, v := range p.Pi {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("mfa: params: pi[%d] = %v must be positive and finite", y, v)
		}
		sum += v
	}
	if math.Abs(sum-1) > sumTol {
		return fmt.Errorf("mfa: params: pi sums to %v, want 1", sum)
	}
	for y, cl := range p.Classes {
		if len(cl.Components) == 0 {
			return fmt.Errorf("mfa: params: class %d has no components", y)
		}
		sum = 0
		for c, cp := range cl.Components {
			where := fmt.Sprintf("mfa: params: class %d component %d", y, c)
			if !(cp.Weight > 0) || math.IsInf(cp.Weight, 0) {
				return fmt.Errorf("%s: weight %v must be positive and finite", where, cp.Weight)
			}
			sum += cp.Weight
			if cp.Factors < 0 || cp.Factors > min(D, maxParamsFactors) {
				return fmt.Errorf("%s: factors = %d out of range [0, %d]", where, cp.Factors, min(D, maxParamsFactors))
			}
			if len(cp.Mean) != D {
				return fmt.Errorf("%s: len(mean) = %d, want D = %d", where, len(cp.Mean), D)
			}
			if len(cp.Psi) != D {
				return fmt.Errorf("%s: len(psi) = %d, want D = %d", where, len(cp.Psi), D)
			}
			if len(cp.Loadings) != D*cp.Factors {
				return fmt.Errorf("%s: len(loadings) = %d, want D×factors = %d", where, len(cp.Loadings), D*cp.Factors)
			}
			if i := finiteAll(cp.Mean); i >= 0 {
				return fmt.Errorf("%s: mean[%d] = %v is not finite", where, i, cp.Mean[i])
			}
			if i := finiteAll(cp.Loadings); i >= 0 {
				return fmt.Errorf("%s: loadings[%d] = %v is not finite", where, i, cp.Loadings[i])
			}
			for i, v := range cp.Psi {
				if !(v > 0) || math.IsInf(v, 0) {
					return fmt.Errorf("%s: psi[%d] = %v must be positive and finite", where, i, v)
				}
			}
		}
		if math.Abs(sum-1) > sumTol {
			return fmt.Errorf("mfa: params: class %d component weights sum to %v, want 1", y, sum)
		}
	}
	return nil
}

// clone returns a deep copy of p.
func (p *Params) clone() Params {
	q := *p
	q.Pi = append([]float64(nil), p.Pi...)
	if p.Spec != nil {
		s := *p.Spec
		q.Spec = &s
	}
	q.Classes = make([]ClassParams, len(p.Classes))
	for y, cl := range p.Classes {
		q.Classes[y].Shape = cl.Shape
		q.Classes[y].Components = make([]ComponentParams, len(cl.Components))
		for c, cp := range cl.Components {
			q.Classes[y].Components[c] = ComponentParams{
				Weight:   cp.Weight,
				Factors:  cp.Factors,
				Mean:     append([]float64(nil), cp.Mean...),
				Loadings: append([]float64(nil), cp.Loadings...),
				Psi:      append([]float64(nil), cp.Psi...),
			}
		}
	}
	return q
}
