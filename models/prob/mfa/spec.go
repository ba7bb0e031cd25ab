package mfa

import (
	"fmt"
	"math"
)

// Limits on a Spec, checked by Validate.
const (
	MinS, MaxS                   = 4, 32
	MinK, MaxK                   = 2, 10
	MinComponents, MaxComponents = 1, 8
	MinFactors, MaxFactors       = 0, 16
	MaxAmbiguity                 = 0.9
	MaxNoise                     = 10.0
)

// Spec chooses the shape of a truth; New fills in everything else from a seed.
type Spec struct {
	// S is the image side: x has D = S² pixels, row-major (pixel (row i, column j) at i*S+j).
	S int `json:"s"`
	// K is the number of classes.
	K int `json:"k"`
	// Components is the number of mixture components (shape variants) per class.
	Components int `json:"components"`
	// Factors is the number of smooth spatial factors per component, taken in the fixed
	// order shift-x, shift-y, brightness, thickness, rotation, then 11 low-order 2-D cosine
	// fields (see the package doc).
	Factors int `json:"factors"`
	// Noise is the pixel noise standard deviation (ψ is Noise² times a mild per-pixel field).
	Noise float64 `json:"noise"`
	// Ambiguity is the mass of each class in its cross-fade components (0 for none). Each
	// pair of neighbouring classes (y, y+1 mod K) shares a cross-fade component: the two
	// classes' base shapes blended half and half, with the same loadings and ψ in both
	// classes plus one morph factor along the difference of the shapes; the two classes'
	// copies differ only in where their mean sits along that difference. Draws from these
	// components are the ambiguous ones, so Ambiguity sets the Bayes error.
	Ambiguity float64 `json:"ambiguity"`
}

// DefaultSpec is the spec used unless a caller asks otherwise: 3 shape components per
// class, 8 smooth factors, pixel noise 0.1 and ambiguity 0.3.
func DefaultSpec(S, K int) Spec {
	return Spec{S: S, K: K, Components: 3, Factors: 8, Noise: 0.1, Ambiguity: 0.3}
}

// D is the dimension S².
func (s Spec) D() int { return s.S * s.S }

// Validate reports the first thing wrong with s, or nil.
func (s Spec) Validate() error {
	switch {
	case s.S < MinS || s.S > MaxS:
		return fmt.Errorf("mfa: image side S = %d out of range [%d, %d]", s.S, MinS, MaxS)
	case s.K < MinK || s.K > MaxK:
		return fmt.Errorf("mfa: number of classes K = %d out of range [%d, %d]", s.K, MinK, MaxK)
	case s.Components < MinComponents || s.Components > MaxComponents:
		return fmt.Errorf("mfa: components per class = %d out of range [%d, %d]", s.Components, MinComponents, MaxComponents)
	case s.Factors < MinFactors || s.Factors > MaxFactors:
		return fmt.Errorf("mfa: factors per component = %d out of range [%d, %d]", s.Factors, MinFactors, MaxFactors)
	case math.IsNaN(s.Noise) || s.Noise <= 0 || s.Noise > MaxNoise:
		return fmt.Errorf("mfa: pixel noise sd = %v must be in (0, %v]", s.Noise, MaxNoise)
	case math.IsNaN(s.Ambiguity) || s.Ambiguity < 0 || s.Ambiguity > MaxAmbiguity:
		return fmt.Errorf("mfa: ambiguity = %v must be in [0, %v]", s.Ambiguity, MaxAmbiguity)
	}
	return nil
}
