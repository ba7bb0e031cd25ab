package kernel

// Portable implementations of the array primitives the kernels are written in. Every
// array is "lane-major": element j of lane l is a[j*L+l], L a multiple of VW. The vector
// build (vec_simd_amd64.go) implements the same primitives on 16 lanes at a time with
// the same operations in the same order per lane, so both builds give the same bits;
// TestVecMatchesGeneric checks this where the vector build is on.

// VW is the vector width in float32 lanes that every lane count is a multiple of.
const VW = 16

func gAdd(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func gSub(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] - b[i]
	}
}

func gMul(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

// gScaleAdd: dst = a*s + b.
func gScaleAdd(dst, a []float32, s float32, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = madd(a[i], s, b[i])
	}
}

func gExp(dst, a []float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = Exp32(a[i])
	}
}

func gTanh(dst, a []float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = Tanh32(a[i])
	}
}

// gSoftmax: for every lane l < L, dst[g*L+l] = softmax over g < G of src[g*L+l]
// (max-stabilised: exp(src - max) / sum). dst may be src.
func gSoftmax(dst, src []float32, G, L int) {
	for l := range L {
		mx := src[l]
		for g := 1; g < G; g++ {
			if v := src[g*L+l]; v > mx {
				mx = v
			}
		}
		var sum float32
		for g := range G {
			e := Exp32(src[g*L+l] - mx)
			dst[g*L+l] = e
			sum += e
		}
		r := 1 / sum
		for g := range G {
			dst[g*L+l] *= r
		}
	}
}

// gSoftmaxLSE is gSoftmax(dst, src, G, L) (skipped when dst is nil) and, for every lane
// l < L, lse[l] = lse32(src, l, G, L), the log-sum-exp over g < G of src[g*L+l].
func gSoftmaxLSE(dst, lse, src []float32, G, L int) {
	if dst != nil {
		gSoftmax(dst, src, G, L)
	}
	for l := range L {
		lse[l] = lse32(src, l, G, L)
	}
}

// gAllFinite reports whether every element of a is finite (x - x == 0).
func gAllFinite(a []float32) bool {
	for _, x := range a {
		if x-x != 0 {
			return false
		}
	}
	return true
}

// gRowSum: dst[l] = sum over g < G of src[g*L+l].
func gRowSum(dst, src []float32, G, L int) {
	for l := range L {
		s := src[l]
		for g := 1; g < G; g++ {
			s += src[g*L+l]
		}
		dst[l] = s
	}
}

// gGradCE: dst[y*L+l] = rw[l]*s[y*L+l] - c[y*L+l] for y < K.
func gGradCE(dst, s, c, rw []float32, K, L int) {
	for y := range K {
		for l := range L {
			i := y*L + l
			dst[i] = float32(rw[l]*s[i]) - c[i]
		}
	}
}

// gGradMix: dst[y*L+l] = (rw[l]*s + w[l]*q) - c for y < K.
func gGradMix(dst, s, q, c, rw, w []float32, K, L int) {
	for y := range K {
		for l := range L {
			i := y*L + l
			dst[i] = madd(rw[l], s[i], float32(w[l]*q[i])) - c[i]
		}
	}
}

// gMMForward: z[x,o] = (sum_i h[x,i]*W[i,o]) + b[o] per lane (i ascending), for x < X.
func gMMForward(z, h, W, b []float32, X, in, out, L int) {
	for x := range X {
		for o := range out {
			zo := z[(x*out+o)*L : (x*out+o+1)*L]
			for l := range L {
				acc := h[(x*in)*L+l] * W[o*L+l]
				for i := 1; i < in; i++ {
					acc = madd(h[(x*in+i)*L+l], W[(i*out+o)*L+l], acc)
				}
				zo[l] = acc + b[o*L+l]
			}
		}
	}
}

// gMMGradW: dW[i,o] = sum_x h[x,i]*d[x,o] per lane (x ascending).
func gMMGradW(dW, h, d []float32, X, in, out, L int) {
	for i := range in {
		for o := range out {
			dst := dW[(i*out+o)*L : (i*out+o+1)*L]
			for l := range L {
				acc := h[i*L+l] * d[o*L+l]
				for x := 1; x < X; x++ {
					acc = madd(h[(x*in+i)*L+l], d[(x*out+o)*L+l], acc)
				}
				dst[l] = acc
			}
		}
	}
}

// gMMBackTanh: dst[x,i] = (sum_o d[x,o]*W[i,o]) * (1 - h[x,i]^2) per lane (o ascending).
func gMMBackTanh(dst, d, W, h []float32, X, in, out, L int) {
	for x := range X {
		for i := range in {
			for l := range L {
				acc := d[(x*out)*L+l] * W[(i*out)*L+l]
				for o := 1; o < out; o++ {
					acc = madd(d[(x*out+o)*L+l], W[(i*out+o)*L+l], acc)
				}
				hv := h[(x*in+i)*L+l]
				dst[(x*in+i)*L+l] = acc * (1 - hv*hv)
			}
		}
	}
}

// gSumX: dst[o] = sum_x d[x,o] (x ascending); with weighted, dst[o] = sum_x x*d[x,o]
// (x = 0 contributes 0, x = 1 its value unscaled).
func gSumX(dst, d []float32, X, out, L int, weighted bool) {
	for o := range out {
		for l := range L {
			var acc float32
			for x := range X {
				v := d[(x*out+o)*L+l]
				if weighted {
					if x == 0 {
						continue
					}
					v = v * float32(x)
				}
				acc += v
			}
			dst[o*L+l] = acc
		}
	}
}

// gAdam applies one Adam step (scaled moments, see models/adam.go) to every parameter
// j < len(theta)/L of every lane: m = 0.9m + g; v = 0.999v + g²;
// theta -= lrT[l]*m / (sqrt(v) + epsT).
func gAdam(theta, m, v, g, lrT []float32, epsT float32, L int) {
	for j := 0; j < len(theta); j += L {
		for l := range L {
			i := j + l
			gi := g[i]
			mi := madd(m[i], beta1, gi)
			vi := madd(v[i], beta2, gi*gi)
			m[i], v[i] = mi, vi
			theta[i] = theta[i] - float32(lrT[l]*mi)/(sqrt32(vi)+epsT)
		}
	}
}

// gGemmFwd (points innermost, P a multiple of VW): z[o,p] = (sum_i W[i,o]*h[i,p]) + b[o].
func gGemmFwd(z, W, b, h []float32, in, out, P int) {
	for o := range out {
		for p := range P {
			acc := W[o] * h[p]
			for i := 1; i < in; i++ {
				acc = madd(W[i*out+o], h[i*P+p], acc)
			}
			z[o*P+p] = acc + b[o]
		}
	}
}

// gGemmBackIn: dh[i,p] = sum_o W[i,o]*d[o,p] (o ascending).
func gGemmBackIn(dh, W, d []float32, in, out, P int) {
	for i := range in {
		for p := range P {
			acc := W[i*out] * d[p]
			for o := 1; o < out; o++ {
				acc = madd(W[i*out+o], d[o*P+p], acc)
			}
			dh[i*P+p] = acc
		}
	}
}

// gGemmBackInTanh: gGemmBackIn, then dh *= 1 - h² (gMulOneMinusSq), the backward pass
// through a tanh layer whose output is h.
func gGemmBackInTanh(dh, W, d, h []float32, in, out, P int) {
	gGemmBackIn(dh, W, d, in, out, P)
	gMulOneMinusSq(dh[:in*P], dh[:in*P], h[:in*P])
}

// gGemmGradW: dW[i,o] += sum_p h[i,p]*d[o,p], summed as the vector code does: 16
// partial sums over the chunks of 16 points, then reduced by reduce16.
func gGemmGradW(dW, h, d []float32, in, out, P int) {
	for i := range in {
		for o := range out {
			var acc [VW]float32
			for l := range VW {
				acc[l] = h[i*P+l] * d[o*P+l]
			}
			for c := VW; c < P; c += VW {
				for l := range VW {
					acc[l] = madd(h[i*P+c+l], d[o*P+c+l], acc[l])
				}
			}
			dW[i*out+o] += reduce16(&acc)
		}
	}
}

// gMulOneMinusSq: dst = a * (1 - h*h).
func gMulOneMinusSq(dst, a, h []float32) {
	a = a[:len(dst)]
	h = h[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * (1 - h[i]*h[i])
	}
}

// reduce16 sums 16 values pairwise in a fixed order (the vector code's order).
func reduce16(a *[VW]float32) float32 {
	var b [8]float32
	for i := range 8 {
		b[i] = a[i] + a[i+8]
	}
	var c [4]float32
	for i := range 4 {
		c[i] = b[i] + b[i+4]
	}
	return (c[0] + c[2]) + (c[1] + c[3])
}

// gSumP: dst[o] += sum_p d[o,p], summed as gGemmGradW (16 partial sums, reduce16).
func gSumP(dst, d []float32, out, P int) {
	for o := range out {
		var acc [VW]float32
		copy(acc[:], d[o*P:o*P+VW])
		for c := VW; c < P; c += VW {
			for l := range VW {
				acc[l] += d[o*P+c+l]
			}
		}
		dst[o] += reduce16(&acc)
	}
}

// gAdamFlat is gAdam for one run's contiguous parameters (one learning rate).
func gAdamFlat(theta, m, v, g []float32, lrT, epsT float32) {
	m = m[:len(theta)]
	v = v[:len(theta)]
	g = g[:len(theta)]
	for i := range theta {
		gi := g[i]
		mi := madd(m[i], beta1, gi)
		vi := madd(v[i], beta2, gi*gi)
		m[i], v[i] = mi, vi
		theta[i] = theta[i] - float32(lrT*mi)/(sqrt32(vi)+epsT)
	}
}

// gDot is Σ a⊙b summed in VW partial sums (element i into lane i mod VW, len(a) a
// multiple of VW), reduced in lane order: the vector build's order, bit for bit.
func gDot(a, b []float32) float32 {
	var acc [VW]float32
	b = b[:len(a)]
	for i := range a {
		acc[i%VW] = madd(a[i], b[i], acc[i%VW])
	}
	return sumLanes(&acc)
}

// gDot2 is (Σ w⊙a, Σ w⊙a⊙a) in gDot's order.
func gDot2(w, a []float32) (float32, float32) {
	var s1, s2 [VW]float32
	a = a[:len(w)]
	for i := range w {
		p := float32(w[i] * a[i])
		s1[i%VW] += p
		s2[i%VW] = madd(p, a[i], s2[i%VW])
	}
	return sumLanes(&s1), sumLanes(&s2)
}

// gMulSub is dst −= a⊙w.
func gMulSub(dst, a, w []float32) {
	a, w = a[:len(dst)], w[:len(dst)]
	for i := range dst {
		dst[i] -= float32(a[i] * w[i])
	}
}

// sumLanes is the lanes' sum in lane order.
func sumLanes(acc *[VW]float32) float32 {
	var s float32
	for _, v := range acc {
		s += v
	}
	return s
}
