package nce

import (
	"fmt"
	"math"
	"testing"

	"github.com/jemcheck/jemcheck/models/prob"
)

// plane2D is the plane's noise in its own 2-D arithmetic (nce's code before the D
// dimensional port): the Cholesky factor of the ridged covariance, the log normaliser,
// the draw of a standard normal pair and the log density.
type plane2D struct {
	m0, m1, l00, l10, l11, logNorm float64
}

func newPlane2D(mean [2]float64, cov [2][2]float64) plane2D {
	c01 := 0.5 * (cov[0][1] + cov[1][0])
	cov[0][1], cov[1][0] = c01, c01
	if math.IsNaN(cov[0][0]+cov[1][1]+c01) || math.IsInf(cov[0][0]+cov[1][1]+c01, 0) {
		cov = [2][2]float64{{1, 0}, {0, 1}}
	}
	pd := func() bool {
		return cov[0][0] > 0 && cov[1][1] > 0 && cov[0][0]*cov[1][1]-cov[0][1]*cov[0][1] > 1e-12*cov[0][0]*cov[1][1]
	}
	for ridge := max(1e-6*(math.Abs(cov[0][0])+math.Abs(cov[1][1])), 1e-12); !pd(); ridge *= 10 {
		cov[0][0] += ridge
		cov[1][1] += ridge
	}
	l00 := math.Sqrt(cov[0][0])
	l10 := cov[1][0] / l00
	l11 := math.Sqrt(cov[1][1] - l10*l10)
	return plane2D{mean[0], mean[1], l00, l10, l11, math.Log(2*math.Pi) + math.Log(l00) + math.Log(l11)}
}

func (n plane2D) sample(z0, z1 float64) (a, b float64) {
	return n.m0 + n.l00*z0, n.m1 + n.l10*z0 + n.l11*z1
}

func (n plane2D) logPdf(a, b float64) float64 {
	y0 := (a - n.m0) / n.l00
	y1 := (b - n.m1 - n.l10*y0) / n.l11
	return -0.5*(y0*y0+y1*y1) - n.logNorm
}

// TestNoisePlaneBitForBit: on the plane the D-dimensional noise (GaussianNoise,
// FitGaussian, Draw, Sample, LogPdf, UniformNoise) gives the 2-D arithmetic's numbers
// bit for bit: for a well-conditioned, a correlated, a singular (ridged), an
// indefinite (ridged) and a NaN (identity) covariance, and for the fitted Gaussian.
func TestNoisePlaneBitForBit(t *testing.T) {
	rng := prob.NewRand(1)
	x0, x1 := make([]float32, 300), make([]float32, 300)
	for i := range x0 {
		x0[i] = float32(rng.NormFloat64())
		x1[i] = float32(0.3*float64(x0[i]) + 0.7*rng.NormFloat64() + 1)
	}
	// The 2-D fit, as FitGaussian did before the port.
	fit := func(inflate float64) ([2]float64, [2][2]float64) {
		n := float64(len(x0))
		var m0, m1 float64
		for i := range x0 {
			m0 += float64(x0[i])
			m1 += float64(x1[i])
		}
		m0, m1 = m0/n, m1/n
		var c00, c01, c11 float64
		for i := range x0 {
			a, b := float64(x0[i])-m0, float64(x1[i])-m1
			c00 += a * a
			c01 += a * b
			c11 += b * b
		}
		s := inflate / n
		return [2]float64{m0, m1}, [2][2]float64{{c00 * s, c01 * s}, {c01 * s, c11 * s}}
	}
	fm, fc := fit(1.7)
	cases := []struct {
		name  string
		mean  [2]float64
		cov   [2][2]float64
		noise Noise
	}{
		{"well-conditioned", [2]float64{0.3, -1}, [2][2]float64{{2, 0.1}, {0.1, 0.5}}, Noise{}},
		{"correlated, asymmetric entries", [2]float64{1, 2}, [2][2]float64{{1, 0.95}, {0.97, 1}}, Noise{}},
		{"singular", [2]float64{}, [2][2]float64{{1, 1}, {1, 1}}, Noise{}},
		{"indefinite", [2]float64{}, [2][2]float64{{1, 2}, {2, 1}}, Noise{}},
		{"zero", [2]float64{}, [2][2]float64{}, Noise{}},
		{"NaN", [2]float64{}, [2][2]float64{{math.NaN(), 0}, {0, 1}}, Noise{}},
		{"fitted (inflate 1.7)", fm, fc, FitGaussian(x0, x1, 1.7)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := newPlane2D(tc.mean, tc.cov)
			got := tc.noise
			if got.Dim == 0 {
				got = GaussianNoise(tc.mean, tc.cov)
			}
			if got.logNorm != want.logNorm || got.l[0] != want.l00 || got.l[2] != want.l10 || got.l[3] != want.l11 || got.l[1] != 0 {
				t.Fatalf("factor %v log normaliser %v, want (%v, %v, %v) %v", got.l, got.logNorm, want.l00, want.l10, want.l11, want.logNorm)
			}
			r1, r2 := prob.NewRand(7), prob.NewRand(7)
			for range 50 {
				a, b := got.Draw(r1)
				wa, wb := want.sample(r2.NormFloat64(), r2.NormFloat64())
				if a != wa || b != wb {
					t.Fatalf("draw (%v, %v), want (%v, %v)", a, b, wa, wb)
				}
				sa, sb := got.Sample(0.3, -1.2)
				if wa, wb := want.sample(0.3, -1.2); sa != wa || sb != wb {
					t.Fatalf("Sample (%v, %v), want (%v, %v)", sa, sb, wa, wb)
				}
				if lp, w := got.LogPdf(a+0.5, b-0.25), want.logPdf(a+0.5, b-0.25); lp != w {
					t.Fatalf("log pdf %v, want %v", lp, w)
				}
			}
		})
	}
	for _, box := range []float64{5, 3.7, 1e-3} {
		u := UniformNoise(box)
		if want := math.Log(4 * box * box); u.LogPdf(0.1, 7) != -want {
			t.Errorf("uniform on [−%g, %g]²: log pdf %v, want %v", box, box, u.LogPdf(0.1, 7), -want)
		}
		r1, r2 := prob.NewRand(3), prob.NewRand(3)
		a, b := u.Draw(r1)
		if wa, wb := (2*r2.Float64()-1)*box, (2*r2.Float64()-1)*box; a != wa || b != wb {
			t.Errorf("uniform draw (%v, %v), want (%v, %v)", a, b, wa, wb)
		}
	}
}

// TestNoiseD: in D dimensions the Gaussian's log density is the closed form
// −½(x−μ)ᵀΣ⁻¹(x−μ) − ½log det(2πΣ) (Σ⁻¹ and det by Gauss–Jordan elimination, apart
// from the Cholesky factor), the Gaussian fitted to 40000 of its draws recovers its
// mean and covariance within 0.05, and the uniform's log density is −D·log(2·Box).
func TestNoiseD(t *testing.T) {
	for _, D := range []int{1, 3, 8, 64} {
		t.Run(fmt.Sprintf("D=%d", D), func(t *testing.T) {
			rng := prob.NewRand(uint64(D))
			// Σ = AAᵀ/D + 0.2·I, μ random.
			A := make([]float64, D*D)
			for i := range A {
				A[i] = rng.NormFloat64()
			}
			cov, mean := make([]float64, D*D), make([]float64, D)
			for i := range D {
				mean[i] = rng.NormFloat64()
				for j := range D {
					for k := range D {
						cov[i*D+j] += A[i*D+k] * A[j*D+k] / float64(D)
					}
				}
				cov[i*D+i] += 0.2
			}
			n := GaussianNoiseD(mean, cov)
			inv, logDet := invert(cov, D)
			x, y := make([]float64, D), make([]float64, D)
			for range 20 {
				for i := range x {
					x[i] = mean[i] + 2*rng.NormFloat64()
				}
				var q float64
				for i := range D {
					for j := range D {
						q += (x[i] - mean[i]) * inv[i*D+j] * (x[j] - mean[j])
					}
				}
				want := -0.5*q - 0.5*(float64(D)*math.Log(2*math.Pi)+logDet)
				copy(y, x)
				if got := n.LogDensity(y); math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
					t.Fatalf("log density %v, closed form %v", got, want)
				}
			}
			const N = 40000
			draws := make([][]float32, D)
			for c := range draws {
				draws[c] = make([]float32, N)
			}
			for i := range N {
				n.DrawTo(rng, x)
				for c := range D {
					draws[c][i] = float32(x[c])
				}
			}
			f := FitGaussianD(draws, 1)
			for i := range D {
				if math.Abs(f.Mean[i]-mean[i]) > 0.05 {
					t.Errorf("fitted mean[%d] %.4f, want %.4f", i, f.Mean[i], mean[i])
				}
				for j := range D {
					if math.Abs(f.Cov[i*D+j]-cov[i*D+j]) > 0.05 {
						t.Errorf("fitted cov[%d][%d] %.4f, want %.4f", i, j, f.Cov[i*D+j], cov[i*D+j])
					}
				}
			}
			u := UniformNoiseD(D, 5)
			if got, want := u.LogDensity(x), -float64(D)*math.Log(10); math.Abs(got-want) > 1e-12*math.Abs(want) {
				t.Errorf("uniform log density %v, want %v", got, want)
			}
			u.DrawTo(rng, x)
			for _, v := range x {
				if math.Abs(v) > 5 {
					t.Errorf("uniform draw %v outside the box", x)
				}
			}
		})
	}
}

// TestNoiseRidge: a singular D-dimensional covariance (rank 1) gets a ridge: its
// factor is finite and its log density finite at its mean; a NaN covariance is the
// identity's.
func TestNoiseRidge(t *testing.T) {
	const D = 5
	cov := make([]float64, D*D)
	for i := range cov {
		cov[i] = 2 // rank 1
	}
	x := make([]float64, D)
	cases := []struct {
		name    string
		cov     []float64
		logNorm float64 // want, NaN: finite only
	}{
		{"rank 1", cov, math.NaN()},
		{"zero", make([]float64, D*D), math.NaN()},
		{"NaN", append([]float64{math.NaN()}, make([]float64, D*D-1)...), D / 2.0 * math.Log(2*math.Pi)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := GaussianNoiseD(make([]float64, D), tc.cov)
			clear(x)
			lp := n.LogDensity(x)
			if math.IsNaN(lp) || math.IsInf(lp, 0) {
				t.Fatalf("log density at the mean %v", lp)
			}
			if !math.IsNaN(tc.logNorm) && n.logNorm != tc.logNorm {
				t.Errorf("log normaliser %v, want the identity's %v", n.logNorm, tc.logNorm)
			}
		})
	}
}

// invert is Σ⁻¹ and log det Σ of a symmetric positive definite Σ [D][D] by Gauss–Jordan
// elimination with partial pivoting.
func invert(a []float64, D int) ([]float64, float64) {
	m := make([]float64, D*2*D)
	for i := range D {
		copy(m[i*2*D:], a[i*D:(i+1)*D])
		m[i*2*D+D+i] = 1
	}
	var logDet float64
	for c := range D {
		p := c
		for r := c + 1; r < D; r++ {
			if math.Abs(m[r*2*D+c]) > math.Abs(m[p*2*D+c]) {
				p = r
			}
		}
		if p != c {
			for k := range 2 * D {
				m[c*2*D+k], m[p*2*D+k] = m[p*2*D+k], m[c*2*D+k]
			}
		}
		piv := m[c*2*D+c]
		logDet += math.Log(math.Abs(piv))
		for k := range 2 * D {
			m[c*2*D+k] /= piv
		}
		for r := range D {
			if r == c {
				continue
			}
			f := m[r*2*D+c]
			for k := range 2 * D {
				m[r*2*D+k] -= f * m[c*2*D+k]
			}
		}
	}
	inv := make([]float64, D*D)
	for i := range D {
		copy(inv[i*D:(i+1)*D], m[i*2*D+D:(i+1)*2*D])
	}
	return inv, logDet
}
