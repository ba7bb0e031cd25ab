package kernel

import (
	"errors"
	"math/rand/v2"
)

// The SGLD-JEM step: one training step of JEM with sampled negatives for an MLP
// 2-H-H-K (tanh) on 2-D inputs, the shape of the SGLD probe and of the torch_sgld.py
// peer. Points are the vector lanes here (one run at a time, its B data points and B
// negatives), so every matrix product is a small GEMM with a broadcast weight and 4
// vector accumulators; a run's result depends only on its own state and inputs.
//
// One step:
//
//  1. T SGLD steps on the negatives x (the caller's chains, e.g. from a replay buffer):
//     x += StepSize·∇x LSE_y f(x) + Noise·ε, ε standard normal from the run's RNG;
//  2. one forward and backward pass on [data; negatives] of the loss
//     CE(data) + PxWeight·(mean LSE f(x_neg) − mean LSE f(x_data)) (no gradient
//     through the chains);
//  3. Adam on the parameters, with the divergence guard: a step that leaves a
//     parameter or moment non-finite is undone and the run flagged (Diverged).
//
// Not wired into the pipeline yet (the sampler method is a later issue).

// SGLDSpec is the shape and the sampler's settings.
type SGLDSpec struct {
	H, K     int     // hidden width (both layers) and classes
	B        int     // data points and negatives per step (a multiple of 16)
	T        int     // SGLD steps per training step
	StepSize float32 // SGLD step on ∇x LSE
	Noise    float32 // SGLD noise standard deviation
	PxWeight float32 // weight of the generative term
}

// SGLDRun is one run's training state. Theta, M and V hold the parameters in the
// canonical layout (W1 [2][H], b1, W2 [H][H], b2, W3 [H][K], b3) padded with zeros to
// a multiple of 16.
type SGLDRun struct {
	Theta, M, V []float32
	LR          float32
	Step        int        // Adam steps taken
	Rng         *rand.Rand // the run's SGLD noise
	Diverged    bool
}

// SGLDParams is the number of parameters of the 2-H-H-K MLP.
func (s SGLDSpec) SGLDParams() int { return 2*s.H + s.H + s.H*s.H + s.H + s.H*s.K + s.K }

// NewSGLDRun makes a run's state from its initial parameters (canonical layout,
// SGLDParams long), learning rate and noise RNG.
func (s SGLDSpec) NewSGLDRun(theta []float32, lr float32, rng *rand.Rand) *SGLDRun {
	n := (s.SGLDParams() + VW - 1) / VW * VW
	r := &SGLDRun{Theta: make([]float32, n), M: make([]float32, n), V: make([]float32, n), LR: lr, Rng: rng}
	copy(r.Theta, theta)
	return r
}

// SGLD holds the scratch space of the SGLD step for one spec; use one per goroutine.
type SGLD struct {
	spec           SGLDSpec
	off            [6]int // W1, b1, W2, b2, W3, b3
	noise          []float32
	x              []float32 // [2][2B]: data, then negatives
	z1, z2, f, s   []float32 // activations [H][P], logits/softmax [K][P]
	d1, d2, d3, dx []float32
	g, snap        []float32
}

// NewSGLD validates spec and allocates the step's buffers.
func NewSGLD(spec SGLDSpec) (*SGLD, error) {
	if spec.H < 1 || spec.K < 2 || spec.B < VW || spec.B%VW != 0 || spec.T < 0 {
		return nil, errors.New("kernel: SGLD spec needs H >= 1, K >= 2, T >= 0 and B a positive multiple of 16")
	}
	H, K, P := spec.H, spec.K, 2*spec.B
	k := &SGLD{spec: spec}
	o := 0
	for i, n := range []int{2 * H, H, H * H, H, H * K, K} {
		k.off[i] = o
		o += n
	}
	np := (o + VW - 1) / VW * VW
	k.noise = make([]float32, spec.T*2*spec.B)
	k.x = make([]float32, 2*P)
	k.z1, k.z2, k.f, k.s = make([]float32, H*P), make([]float32, H*P), make([]float32, K*P), make([]float32, K*P)
	k.d1, k.d2, k.d3, k.dx = make([]float32, H*P), make([]float32, H*P), make([]float32, K*P), make([]float32, 2*P)
	k.g, k.snap = make([]float32, np), make([]float32, 3*np)
	return k, nil
}

func (k *SGLD) params(theta []float32) (W1, b1, W2, b2, W3, b3 []float32) {
	H, K, o := k.spec.H, k.spec.K, k.off
	return theta[o[0] : o[0]+2*H], theta[o[1] : o[1]+H], theta[o[2] : o[2]+H*H], theta[o[3] : o[3]+H],
		theta[o[4] : o[4]+H*K], theta[o[5] : o[5]+K]
}

// forward computes the logits k.f [K][P] of the points x [2][P] (tanh activations in
// k.z1, k.z2).
func (k *SGLD) forward(theta, x []float32, P int) {
	H, K := k.spec.H, k.spec.K
	W1, b1, W2, b2, W3, b3 := k.params(theta)
	z1, z2, f := k.z1[:H*P], k.z2[:H*P], k.f[:K*P]
	vGemmFwd(z1, W1, b1, x, 2, H, P)
	vTanh(z1, z1)
	vGemmFwd(z2, W2, b2, z1, H, H, P)
	vTanh(z2, z2)
	vGemmFwd(f, W3, b3, z2, H, K, P)
}

// inputGrad computes dx [2][P] = ∇x LSE_y f(x) for the points x [2][P].
func (k *SGLD) inputGrad(theta, x, dx []float32, P int) {
	H, K := k.spec.H, k.spec.K
	W1, _, W2, _, W3, _ := k.params(theta)
	k.forward(theta, x, P)
	s := k.s[:K*P]
	vSoftmax(s, k.f[:K*P], K, P)
	d2, d1 := k.d2[:H*P], k.d1[:H*P]
	vGemmBackInTanh(d2, W3, s, k.z2[:H*P], H, K, P)
	vGemmBackInTanh(d1, W2, d2, k.z1[:H*P], H, H, P)
	vGemmBackIn(dx, W1, d1, 2, H, P)
}

// sgld runs the T SGLD steps on the negatives xn [2][B] in place.
func (k *SGLD) sgld(r *SGLDRun, xn []float32) {
	B, T := k.spec.B, k.spec.T
	for i := range k.noise {
		k.noise[i] = float32(r.Rng.NormFloat64())
	}
	dx := k.dx[:2*B]
	for t := range T {
		k.inputGrad(r.Theta, xn, dx, B)
		vScaleAdd(xn, dx, k.spec.StepSize, xn)
		vScaleAdd(xn, k.noise[t*2*B:(t+1)*2*B], k.spec.Noise, xn)
	}
}

// gradient computes the loss and its parameter gradient k.g at theta, for data points
// xd [2][B] with labels yd and negatives xn [2][B].
func (k *SGLD) gradient(theta, xd []float32, yd []int32, xn []float32) float32 {
	H, K, B := k.spec.H, k.spec.K, k.spec.B
	P := 2 * B
	w := k.spec.PxWeight
	for i := range 2 {
		copy(k.x[i*P:i*P+B], xd[i*B:(i+1)*B])
		copy(k.x[i*P+B:(i+1)*P], xn[i*B:(i+1)*B])
	}
	k.forward(theta, k.x, P)
	f, s, d3 := k.f[:K*P], k.s[:K*P], k.d3[:K*P]
	vSoftmax(s, f, K, P)
	// dL/df: data (1-w)s/B - onehot(y)/B, negatives w s/B. Loss: mean over the data of
	// LSE - f[y], plus w (mean LSE(neg) - mean LSE(data)).
	invB := 1 / float32(B)
	var loss float32
	for p := range P {
		mx := f[p]
		for y := 1; y < K; y++ {
			mx = max(mx, f[y*P+p])
		}
		var sum float32
		for y := range K {
			sum += Exp32(f[y*P+p] - mx)
		}
		lse := mx + Log32(sum)
		scale := w * invB
		if p < B {
			scale = (1 - w) * invB
			loss += (lse - f[int(yd[p])*P+p]) * invB
			loss -= w * lse * invB
		} else {
			loss += w * lse * invB
		}
		for y := range K {
			d3[y*P+p] = s[y*P+p] * scale
		}
		if p < B {
			d3[int(yd[p])*P+p] -= invB
		}
	}
	W1, _, W2, _, W3, _ := k.params(theta)
	gW1, gb1, gW2, gb2, gW3, gb3 := k.params(k.g)
	clear(k.g)
	z1, z2 := k.z1[:H*P], k.z2[:H*P]
	vGemmGradW(gW3, z2, d3, H, K, P)
	vSumP(gb3, d3, K, P)
	d2 := k.d2[:H*P]
	vGemmBackInTanh(d2, W3, d3, z2, H, K, P)
	vGemmGradW(gW2, z1, d2, H, H, P)
	vSumP(gb2, d2, H, P)
	d1 := k.d1[:H*P]
	vGemmBackInTanh(d1, W2, d2, z1, H, H, P)
	vGemmGradW(gW1, k.x, d1, 2, H, P)
	vSumP(gb1, d1, H, P)
	_ = W1
	return loss
}

// Step performs one SGLD-JEM training step of r: the negatives xn [2][B] (points
// innermost) are refined in place by T SGLD steps, then the parameters take one Adam
// step on the data xd [2][B], yd [B] and the refined negatives. It returns the loss
// before the update. A diverged run is left as it is.
func (k *SGLD) Step(r *SGLDRun, xd []float32, yd []int32, xn []float32) float32 {
	if r.Diverged {
		return 0
	}
	k.sgld(r, xn)
	loss := k.gradient(r.Theta, xd, yd, xn)
	n := len(r.Theta)
	copy(k.snap[:n], r.Theta)
	copy(k.snap[n:2*n], r.M)
	copy(k.snap[2*n:3*n], r.V)
	r.Step++
	lrScale, epsT := AdamScalars(r.Step)
	vAdamFlat(r.Theta, r.M, r.V, k.g[:n], r.LR*float32(lrScale), float32(epsT))
	for _, a := range [][]float32{r.Theta, r.M, r.V} {
		for _, x := range a {
			if x-x != 0 {
				copy(r.Theta, k.snap[:n])
				copy(r.M, k.snap[n:2*n])
				copy(r.V, k.snap[2*n:3*n])
				r.Diverged = true
				return loss
			}
		}
	}
	return loss
}

// SGLDFlopsPerStep counts the floating-point operations of one Step (multiply-adds 2,
// exp/tanh/division 1), the figure behind the benchmark's GFLOP/s.
func (s SGLDSpec) SGLDFlopsPerStep() float64 {
	H, K, B, T := float64(s.H), float64(s.K), float64(s.B), float64(s.T)
	fwd := 2*(2*H+H*H+H*K) + 2*H + 2*H + K // products, biases, tanh, biases
	back := 2*(H*K+H*H+2*H) + 3*2*H        // input-side products, tanh'
	soft := 5 * K
	sgldStep := B * (fwd + back + soft + 4)
	param := 2 * B * (fwd + soft + 2*(H*K+H*H+2*H) + 2*(H*K+H*H) + 3*2*H + K + 2*H)
	return T*sgldStep + param + 10*float64(s.SGLDParams())
}
