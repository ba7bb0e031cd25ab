package kernel

// testObjective is a small contrastive objective for the trainers' tests (the kernel's
// tests cannot import methods/…): every step B negatives drawn uniformly on the box from
// st.Rng, moved by Steps noisy ascent moves on ℓ through st.LSE (noise from st.Noise),
// and the loss mean ℓ(negatives) − mean ℓ(data) + (c − 1)², c its one parameter
// (starting at 0). It counts the points it evaluates with a gradient (GradEvals' check)
// and, with Keep, returns its last negatives as the Buffer [B][D] with their share in
// the box.
type testObjective struct {
	Steps int
	Keep  bool
	// Calls counts the points evaluated through st.LSE with a gradient.
	Calls   int64
	neg     []float32 // [D][B]
	e, grad []float32
}

func (o *testObjective) Lanes(B, _ int) int    { return 2 * B }
func (*testObjective) Params() int             { return 1 }
func (o *testObjective) GradEvals(B int) int64 { return int64(o.Steps * B) }

func (o *testObjective) Begin(st *Step) {
	if len(o.neg) != st.Dim*st.B {
		o.neg, o.grad, o.e = make([]float32, st.Dim*st.B), make([]float32, st.Dim*st.B), make([]float32, st.B)
	}
}

func (o *testObjective) Fill(st *Step) {
	B, P := st.B, st.P
	for i := range o.neg {
		o.neg[i] = (2*st.Rng.Float32() - 1) * st.Box
	}
	for range o.Steps {
		st.LSE(o.neg, B, o.e, o.grad)
		o.Calls += int64(B)
		for i := range o.neg {
			o.neg[i] += 0.01*o.grad[i] + 0.1*float32(st.Noise.NormFloat64())
		}
	}
	for c := range st.Dim {
		copy(st.X[c*P+B:(c+1)*P], o.neg[c*B:(c+1)*B])
	}
}

func (o *testObjective) Loss(st *Step, lse, coef []float32) float32 {
	B := st.B
	inv := 1 / float32(B)
	var l float32
	for p := range B {
		l -= lse[p] * inv
		coef[p] = -inv
	}
	for p := B; p < 2*B; p++ {
		l += lse[p] * inv
		coef[p] = inv
	}
	d := st.Extra[0] - 1
	st.ExtraGrad[0] = 2 * d
	return l + d*d
}

func (o *testObjective) End(st *Step, res *Result2D) {
	res.Stats = map[string]float64{"c": float64(st.Extra[0])}
	if !o.Keep {
		return
	}
	B, D := st.B, st.Dim
	res.Buffer = make([]float32, B*D)
	in := 0
	for p := range B {
		ok := true
		for c := range D {
			v := o.neg[c*B+p]
			res.Buffer[p*D+c] = v
			ok = ok && abs32(v) <= st.Box
		}
		if ok {
			in++
		}
	}
	res.InBox = float64(in) / float64(B)
}
