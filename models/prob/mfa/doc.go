// Package mfa is a labelled image distribution with an exact density: per class y a
// mixture of factor analysers (MFA),
//
//	p(x, y) = π_y Σ_c w_yc N(x; μ_yc, Λ_yc Λ_ycᵀ + diag ψ_yc),   x ∈ R^D, D = S²,
//
// built from a seed so that everything — draws, log p(x, y), log p(x), the Bayes
// posterior p(y | x) and the Bayes accuracy — is known exactly at image scale
// (S = 8, 16, 28: D = 64, 256, 784). It is pure maths: the standard library and
// models/prob's seeding only.
//
// # Construction (New)
//
// Shapes. Each class draws a procedural shape kind — segment, blob (filled ellipse),
// ring, arc, cross, bar (filled rectangle) or vee — the first seven classes all
// different, with random centre, size, orientation, thickness and ink (0.85–1). Shapes
// live in unit coordinates and are rendered anti-aliased at S×S (3×3 sub-samples of a
// coverage ramp one pixel wide), so intensities lie in [0, 1] on a black background.
//
// Components. Spec.Components shape components per class are variants of the class
// shape: shifted by up to ±0.06 of the side, rotated by up to ±0.25 rad, thickness ×0.8–1.25,
// ink ×0.9–1.08; μ_yc is the rendered variant. Their weights are U(0.5, 1.5) draws,
// normalised. π is uniform.
//
// Factors (the columns of Λ, each scaled to a stated standard deviation of its mode),
// taken in this order up to Spec.Factors:
//
//	0, 1  horizontal, vertical shift: central differences of the re-rendered shape, sd 0.04 of the side
//	2     brightness: 0.12 μ
//	3     thickness: central difference in stroke half-width, sd 15 %
//	4     rotation: central difference in angle, sd 0.1 rad
//	5–15  low-frequency fields cos(πp(j+½)/S) cos(πq(i+½)/S), (p, q) = (0,0), (1,0), (0,1),
//	      (1,1), (2,0), (0,2), (2,1), (1,2), (2,2), (3,0), (0,3), amplitude 0.05 × U(0.5, 1.5)
//
// Noise. ψ_yc,i = Noise² exp(0.3 f(i) + 0.1 u_i) with f a smooth random field in [−1, 1]
// (five low-order cosines) and u_i ~ U(−1, 1): pixel noise sd about Noise, mildly varying.
//
// Ambiguity. With shapes this distinct and pixel noise 0.1, classes would be separable
// almost surely (Bayes accuracy 1.000 at every S and K). Real overlap needs two classes'
// distributions to coincide outside a shared subspace, so neighbouring classes
// (y, y+1 mod K; one pair when K = 2) share a cross-fade component: the two base shapes
// blended half and half, with identical ψ and smooth factors in both classes plus a morph
// factor 0.15 (s_b − s_a); class a's copy has mean (0.6 s_a + 0.4 s_b), class b's
// (0.4 s_a + 0.6 s_b). These carry mass Spec.Ambiguity of each class (split between its
// two pairs) and hold all the Bayes error: accuracy ≈ 1 − Ambiguity Φ(−0.1/0.15) ≈ 0.92 at
// the default 0.3, nearly independent of S and K (measured 0.90–0.93 for S = 8, 16, 28
// and K = 2–10). Ambiguity 0 removes them.
//
// # Exact evaluation
//
// Per component, with d latent factors, build precomputes M = I_d + Λᵀ Ψ⁻¹ Λ, its Cholesky
// factor L, A = L⁻¹ Λᵀ Ψ⁻¹ (d×D) and log det Σ = Σ_i log ψ_i + 2 Σ_j log L_jj (matrix
// determinant lemma). Then, by the Woodbury identity, with r = x − μ,
//
//	(x − μ)ᵀ Σ⁻¹ (x − μ) = Σ_i r_i² / ψ_i − ‖A r‖²,
//
// so log N costs D(d + 1) multiply-adds: O(D·d) per component (O(D·d²) once, to build);
// a LogJoint sums over all K·(Components + 2) components. The kernel runs in eight lanes,
// on AVX-512 under GOEXPERIMENT=simd and in scalars otherwise, with the same bits.
// Evaluator does this without allocating (one per goroutine); the Truth methods draw
// evaluators from a pool. Params exports every number, so a user can recompute the density
// independently; FromParams rebuilds a Truth from them, bit for bit.
//
// # Exact draws
//
// y ~ π, c ~ w_y, z ~ N(0, I_d), ε ~ N(0, I_D), x = μ_yc + Λ_yc z + √ψ_yc ⊙ ε.
package mfa
