package mfa

import (
	"math"
	"math/rand/v2"
)

// Shape kinds. Each class draws one; the first seven classes get seven different kinds.
const (
	kindSegment = iota // a straight stroke
	kindBlob           // a filled ellipse
	kindRing           // a circle outline
	kindArc            // part of a circle outline
	kindCross          // two crossing strokes
	kindBar            // a filled rotated rectangle
	kindVee            // two strokes meeting at a vertex
	numKinds
)

var kindNames = [numKinds]string{"segment", "blob", "ring", "arc", "cross", "bar", "vee"}

// shape is a procedural image in unit coordinates: u (column) and v (row) in [0, 1].
type shape struct {
	kind   int
	cx, cy float64 // centre
	r      float64 // size: half-length of strokes, radius of rings and arcs
	theta  float64 // orientation (radians)
	hw     float64 // half thickness (blob: minor radius; bar: half width)
	extra  float64 // arc: span; cross: angle between strokes; vee: half opening; blob: aspect
	ink    float64 // peak intensity
}

func uniform(rng *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }

// drawShape draws the base shape of a class of the given kind at image side S.
func drawShape(rng *rand.Rand, kind, S int) shape {
	px := 1 / float64(S)
	hwLo := math.Max(0.04, 0.7*px)
	sh := shape{
		kind:  kind,
		cx:    uniform(rng, 0.4, 0.6),
		cy:    uniform(rng, 0.4, 0.6),
		r:     uniform(rng, 0.2, 0.3),
		theta: uniform(rng, 0, math.Pi),
		hw:    uniform(rng, hwLo, hwLo+0.03),
		ink:   uniform(rng, 0.85, 1),
	}
	switch kind {
	case kindBlob:
		sh.hw = uniform(rng, 0.1, 0.16)
		sh.extra = uniform(rng, 1.1, 1.8)
	case kindRing:
		sh.r = uniform(rng, 0.18, 0.28)
	case kindArc:
		sh.r = uniform(rng, 0.2, 0.3)
		sh.extra = uniform(rng, 0.5*math.Pi, 1.3*math.Pi)
	case kindCross:
		sh.extra = uniform(rng, math.Pi/3, math.Pi/2)
	case kindBar:
		sh.hw = uniform(rng, 0.07, 0.12)
	case kindVee:
		sh.extra = uniform(rng, 0.3, 0.7)
	case kindSegment:
		sh.r = uniform(rng, 0.25, 0.35)
	}
	return sh
}

// variant draws a component of a class: a small shift, rotation, thickness and ink change.
func (sh shape) variant(rng *rand.Rand) shape {
	v := sh
	v.cx += uniform(rng, -0.06, 0.06)
	v.cy += uniform(rng, -0.06, 0.06)
	v.theta += uniform(rng, -0.25, 0.25)
	v.hw *= uniform(rng, 0.8, 1.25)
	v.ink = math.Min(1, v.ink*uniform(rng, 0.9, 1.08))
	return v
}

// segDist is the distance from (x, y) to the segment from (ax, ay) to (bx, by).
func segDist(x, y, ax, ay, bx, by float64) float64 {
	dx, dy := bx-ax, by-ay
	t := ((x-ax)*dx + (y-ay)*dy) / (dx*dx + dy*dy)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(x-ax-t*dx, y-ay-t*dy)
}

// sdf is the signed distance (negative inside) from the unit-coordinate point (u, v) to sh.
func (sh shape) sdf(u, v float64) float64 {
	s, c := math.Sincos(sh.theta)
	dx, dy := u-sh.cx, v-sh.cy
	x, y := dx*c+dy*s, -dx*s+dy*c
	switch sh.kind {
	case kindSegment:
		return segDist(x, y, -sh.r, 0, sh.r, 0) - sh.hw
	case kindBlob:
		a, b := sh.hw*sh.extra, sh.hw
		return (math.Hypot(x/a, y/b) - 1) * b
	case kindRing:
		return math.Abs(math.Hypot(x, y)-sh.r) - sh.hw
	case kindArc:
		half := sh.extra / 2
		if math.Abs(math.Atan2(y, x)) <= half {
			return math.Abs(math.Hypot(x, y)-sh.r) - sh.hw
		}
		es, ec := math.Sincos(half)
		d := math.Min(math.Hypot(x-sh.r*ec, y-sh.r*es), math.Hypot(x-sh.r*ec, y+sh.r*es))
		return d - sh.hw
	case kindCross:
		es, ec := math.Sincos(sh.extra)
		d1 := segDist(x, y, -sh.r, 0, sh.r, 0)
		d2 := segDist(x, y, -sh.r*ec, -sh.r*es, sh.r*ec, sh.r*es)
		return math.Min(d1, d2) - sh.hw
	case kindBar:
		qx, qy := math.Abs(x)-sh.r, math.Abs(y)-sh.hw
		out := math.Hypot(math.Max(qx, 0), math.Max(qy, 0))
		return out + math.Min(math.Max(qx, qy), 0)
	case kindVee:
		es, ec := math.Sincos(sh.extra)
		vy := -0.5 * sh.r * ec
		d1 := segDist(x, y, 0, vy, sh.r*es, vy+sh.r*ec)
		d2 := segDist(x, y, 0, vy, -sh.r*es, vy+sh.r*ec)
		return math.Min(d1, d2) - sh.hw
	}
	panic("mfa: unknown shape kind")
}

// render draws sh anti-aliased into img (length S²): each pixel averages 3×3 sub-samples
// of a coverage ramp one pixel wide, so intensities lie in [0, ink].
func (sh shape) render(S int, img []float64) {
	px := 1 / float64(S)
	const sub = 3
	for i := range S {
		for j := range S {
			var acc float64
			for a := range sub {
				v := (float64(i) + (float64(a)+0.5)/sub) * px
				for b := range sub {
					u := (float64(j) + (float64(b)+0.5)/sub) * px
					acc += math.Max(0, math.Min(1, 0.5-sh.sdf(u, v)/px))
				}
			}
			img[i*S+j] = sh.ink * acc / (sub * sub)
		}
	}
}
