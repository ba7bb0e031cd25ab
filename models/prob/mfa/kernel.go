package mfa

// The Mahalanobis kernel: q = Σ_i r_i²/ψ_i − Σ_j (A_j · r)² with r = x − μ, written to
// r. Both builds compute it in eight lanes — lane l sums the indices i ≡ l (mod 8) of
// the first D − D%8 pixels, products rounded before each add (no fused multiply-add) —
// then reduce the lanes in the tree ((0+1)+(2+3))+((4+5)+(6+7)) and add the remaining
// D%8 pixels one by one. The AVX-512 build (GOEXPERIMENT=simd on amd64) does the lanes
// in vector registers, the portable one in scalars: the same operations in the same
// order, so the two give the same bits.

// reduce8 sums eight lanes in the fixed tree.
func reduce8(s *[8]float64) float64 {
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// quadScalar is the portable kernel (see the file comment).
func quadScalar(x, mu, ip, a []float64, d int, r []float64) float64 {
	D := len(x)
	mu, ip, r = mu[:D], ip[:D], r[:D]
	n8 := D &^ 7
	var s [8]float64
	for i := 0; i < n8; i += 8 {
		for l := range 8 {
			v := x[i+l] - mu[i+l]
			r[i+l] = v
			s[l] += float64(float64(v*v) * ip[i+l])
		}
	}
	q := reduce8(&s)
	for i := n8; i < D; i++ {
		v := x[i] - mu[i]
		r[i] = v
		q += float64(float64(v*v) * ip[i])
	}
	for j := range d {
		u := dotLanes(a[j*D:(j+1)*D], r)
		q -= float64(u * u)
	}
	return q
}

// dotLanes is a · r in the lane order of the file comment.
func dotLanes(a, r []float64) float64 {
	D := len(r)
	a = a[:D]
	n8 := D &^ 7
	var s [8]float64
	for i := 0; i < n8; i += 8 {
		for l := range 8 {
			s[l] += float64(a[i+l] * r[i+l])
		}
	}
	u := reduce8(&s)
	for i := n8; i < D; i++ {
		u += float64(a[i] * r[i])
	}
	return u
}
