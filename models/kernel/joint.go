package kernel

import (
	"context"
	"fmt"
	"math"
)

// The joint model of the block tasks (issue 22, item 3): ONE tanh MLP D-H…-K on all D
// coordinates of x ∈ ℝ^D, f(x)[y] read as the negative energy of (x, y), the real JEM
// setting. Its normaliser Z = ∫ Σ_y exp f(x)[y] dx over the box has no closed form, so
// exact JEM cannot train it (Spec2D.Exact is refused); TrainJoint trains it with the
// additive trainer's computation with one net on all coordinates:
//
//   - Baseline (neither Exact nor Objective): cross-entropy of softmax_y f(x) on
//     minibatches of the run's draws.
//   - A method's Objective (Spec2D.Objective) on lanes of all D coordinates: sgld's
//     replay buffer of D-dimensional chains, the paper's JEM, and every other recipe.
//
// Parameters: InitJoint's layout (InitTheta of the layers D-H…-K); the draws X are N×D
// row-major.

// SpecJoint is the joint model, loss and schedule of a TrainJoint call: a Spec2D (the
// hidden widths, K, the baseline or an Objective) and the dimension D.
type SpecJoint struct {
	Spec2D
	Dim int
}

// MaxJointDim is the most coordinates of a joint model's input (a block task's 2B).
const MaxJointDim = 2 * MaxAdditiveBlocks

// Validate reports the first problem with the spec, or nil.
func (s SpecJoint) Validate() error {
	if s.Dim < 2 || s.Dim > MaxJointDim || s.Dim%2 != 0 {
		return fmt.Errorf("kernel: joint model needs an even dimension in [2, %d], got %d", MaxJointDim, s.Dim)
	}
	if s.Exact {
		return fmt.Errorf("kernel: exact jem cannot train the joint model (its normaliser over %d dimensions has no exact sum); the block-additive model is the exact reference", s.Dim)
	}
	return s.Spec2D.validate(s.Dim)
}

// NumParamsJoint is the number of parameters of the joint MLP dim-hidden…-K.
func NumParamsJoint(hidden []int, k, dim int) int {
	n := 0
	for _, l := range layersIn(dim, hidden, k) {
		n += l.in*l.out + l.out
	}
	return n
}

// InitJoint draws a run's initial parameters of the joint MLP dim-hidden…-K (InitTheta).
func InitJoint(seed uint64, hidden []int, k, dim int) []float32 {
	ls := layersIn(dim, hidden, k)
	layers := make([][2]int, len(ls))
	for i, l := range ls {
		layers[i] = [2]int{l.in, l.out}
	}
	return InitTheta(seed, layers)
}

// TrainJoint trains every run (X: N×Dim draws) for spec.Steps steps and returns one
// Result2D per run (an objective's Buffer [n][Dim]), in order, the runs spread over
// GOMAXPROCS goroutines as Train2D's.
func TrainJoint(ctx context.Context, spec SpecJoint, runs []RunAdditive) ([]Result2D, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := checkRunsD(runs, NumParamsJoint(spec.Hidden, spec.K, spec.Dim), spec.Dim, spec.K); err != nil {
		return nil, err
	}
	return trainRuns(ctx, len(runs), func() *trainerAdd { return newTrainerJoint(spec) },
		func(t *trainerAdd, i int) Result2D { return t.train(&runs[i]) }, setCPU2D)
}

func newTrainerJoint(spec SpecJoint) *trainerAdd {
	return newTrainerD(spec.Spec2D, spec.Dim/2, spec.Dim, layersIn(spec.Dim, spec.Hidden, spec.K))
}

// JointPointLogits is the joint model's logits f(x)[y] at n points x [n][dim], row-major
// [n][K] in float64 (the model in float32 as trained).
func JointPointLogits(hidden []int, k, dim int, theta []float32, x []float64, n int) ([]float64, error) {
	if len(theta) != NumParamsJoint(hidden, k, dim) || len(x) != n*dim {
		return nil, fmt.Errorf("kernel: JointPointLogits: len(theta) = %d, len(x) = %d, want %d and %d", len(theta), len(x), NumParamsJoint(hidden, k, dim), n*dim)
	}
	return sumPointLogits(layersIn(dim, hidden, k), theta, 1, dim, x, n), nil
}

// AdditivePointLogits is the additive model's logits Σ_b g_b(x_b)[y] at n points x
// [n][2·blocks], row-major [n][K] in float64 (the model in float32 as trained).
func AdditivePointLogits(hidden []int, k, blocks int, theta []float32, x []float64, n int) ([]float64, error) {
	if len(theta) != NumParamsAdditive(hidden, k, blocks) || len(x) != n*2*blocks {
		return nil, fmt.Errorf("kernel: AdditivePointLogits: len(theta) = %d, len(x) = %d, want %d and %d", len(theta), len(x), NumParamsAdditive(hidden, k, blocks), n*2*blocks)
	}
	return sumPointLogits(layers2D(hidden, k), theta, blocks, 2, x, n), nil
}

// sumPointLogits is Σ_i net_i(x[i·win:(i+1)·win])[y] over nets nets of layers ls
// (parameters concatenated in theta) at n points x [n][nets·win], [n][K] in float64.
func sumPointLogits(ls []dims, theta []float32, nets, win int, x []float64, n int) []float64 {
	const chunk = pointChunk
	k := ls[len(ls)-1].out
	d := nets * win
	net := newMLP(ls, chunk)
	np := len(theta) / nets
	th := make([]float32, net.np)
	xin := make([]float32, win*chunk)
	out := make([]float64, n*k)
	for lo := 0; lo < n; lo += chunk {
		m := min(chunk, n-lo)
		P := (m + VW - 1) / VW * VW
		for b := range nets {
			copy(th, theta[b*np:(b+1)*np])
			clear(xin)
			for c := range m {
				for j := range win {
					xin[j*P+c] = float32(x[(lo+c)*d+b*win+j])
				}
			}
			net.forward(th, xin[:win*P], P)
			for c := range m {
				for y := range k {
					out[(lo+c)*k+y] += float64(net.f[y*P+c])
				}
			}
		}
	}
	return out
}

// RowLSE is LSE_y of every row of logits [n][k].
func RowLSE(logits []float64, k int) []float64 {
	n := len(logits) / k
	out := make([]float64, n)
	ClearUpper() // see package avx
	for i := range n {
		row := logits[i*k : (i+1)*k]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = max(mx, v)
		}
		var s float64
		for _, v := range row {
			s += math.Exp(v - mx)
		}
		out[i] = mx + math.Log(s)
	}
	return out
}
