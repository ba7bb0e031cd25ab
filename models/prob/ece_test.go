package prob

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestECE: the binned ECE against values computed by hand.
func TestECE(t *testing.T) {
	cases := []struct {
		name    string
		conf    []float64
		correct []bool
		bins    int
		want    float64
	}{
		{"empty", nil, nil, 10, 0},
		{"all correct at confidence 1", []float64{1, 1, 1}, []bool{true, true, true}, 15, 0},
		{"all wrong at confidence 1", []float64{1, 1}, []bool{false, false}, 15, 1},
		// (0, ½]: conf 0.3, acc ½ → |0.2|·2/4; (½, 1]: conf 0.75, acc 1 → 0.25·2/4.
		{"two bins", []float64{0.2, 0.4, 0.6, 0.9}, []bool{false, true, true, true}, 2, 0.1 + 0.125},
		// ½ is in (0, ½] (Guo et al.'s right-closed bins): bin 0 {0.5, 0.1}, conf 0.3, acc ½.
		{"edge ½ in the lower bin", []float64{0.5, 0.1, 0.7}, []bool{true, false, true}, 2, (2*0.2 + 0.3) / 3},
		// 0 goes to the first bin, 1 to the last: bin 0 {0, 0.25} conf 0.125 acc ½;
		// bin 3 {1, 0.8} conf 0.9 acc ½.
		{"confidences 0 and 1", []float64{0, 0.25, 1, 0.8}, []bool{true, false, false, true}, 4, (2*0.375 + 2*0.4) / 4},
		{"one bin", []float64{0.9, 0.6, 0.3}, []bool{true, true, false}, 1, math.Abs(2.0/3 - 0.6)},
		// 0.3 with 10 bins is in (0.2, 0.3] with 0.25 (conf 0.275, acc ½); it would be
		// alone in (0.3, 0.4] if binned by ⌈0.3·10⌉ (3.0000000000000004 in float64),
		// giving (0.7 + 0.25)/2.
		{"float edge 0.3", []float64{0.3, 0.25}, []bool{true, false}, 10, 0.225},
		// −½ goes to the first bin, 1.5 to the last, their values kept: (1.5 + 0.5)/2.
		{"outside [0, 1] to the edge bins", []float64{-0.5, 1.5}, []bool{true, true}, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ECE(c.conf, c.correct, c.bins)
			if math.Abs(got-c.want) > 1e-12 {
				t.Errorf("ECE = %v, want %v", got, c.want)
			}
		})
	}
}

// TestECEWeighted: unit weights with 0/1 accuracies give ECE exactly; weights act as
// repetitions; fractional accuracies are averaged.
func TestECEWeighted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 1000} {
		conf, acc, ones := make([]float64, n), make([]float64, n), make([]float64, n)
		correct := make([]bool, n)
		for i := range n {
			conf[i] = rng.Float64()
			correct[i] = rng.Float64() < conf[i]
			if correct[i] {
				acc[i] = 1
			}
			ones[i] = 1
		}
		for _, bins := range []int{1, 10, 15} {
			if e, w := ECE(conf, correct, bins), ECEWeighted(conf, acc, ones, bins); e != w {
				t.Errorf("n=%d bins=%d: ECE %v, ECEWeighted with unit weights %v", n, bins, e, w)
			}
			if e, w := ECE(conf, correct, bins), ECEWeighted(conf, acc, nil, bins); e != w {
				t.Errorf("n=%d bins=%d: ECE %v, ECEWeighted with nil weights %v", n, bins, e, w)
			}
		}
	}
	cases := []struct {
		name              string
		conf, acc, weight []float64
		bins              int
		want              float64
	}{
		{"weight as repetition", []float64{0.9, 0.7}, []float64{1, 0}, []float64{3, 1}, 1,
			ECE([]float64{0.9, 0.9, 0.9, 0.7}, []bool{true, true, true, false}, 1)},
		// bin (½, 1]: weights 1, 3: conf (0.6 + 3·0.8)/4 = 0.75, acc (0.5 + 3·0.9)/4 = 0.8;
		// bin (0, ½]: weight 4, conf 0.4, acc 0.4.
		{"fractional accuracy", []float64{0.6, 0.8, 0.4}, []float64{0.5, 0.9, 0.4}, []float64{1, 3, 4}, 2, 4.0 / 8 * 0.05},
		{"zero total weight", []float64{0.6}, []float64{0}, []float64{0}, 5, 0},
		{"zero weight ignored", []float64{0.6, 0.9}, []float64{0, 0.9}, []float64{0, 2}, 5, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ECEWeighted(c.conf, c.acc, c.weight, c.bins); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("ECEWeighted = %v, want %v", got, c.want)
			}
		})
	}
}

// TestReliabilityBins: the counts sum to n, the bins tile [0, 1], the means are the
// bins' and the ECE follows from them.
func TestReliabilityBins(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, bins := 500, 12
	conf, correct := make([]float64, n), make([]bool, n)
	for i := range n {
		conf[i] = math.Sqrt(rng.Float64())
		correct[i] = rng.Float64() < conf[i]*conf[i]
	}
	conf[0], conf[1] = 0, 1
	rb := ReliabilityBins(conf, correct, bins)
	if len(rb) != bins {
		t.Fatalf("%d bins, want %d", len(rb), bins)
	}
	sum, ece := 0, 0.0
	for m, b := range rb {
		sum += b.Count
		if b.Lo != float64(m)/float64(bins) || b.Hi != float64(m+1)/float64(bins) {
			t.Errorf("bin %d: (%v, %v]", m, b.Lo, b.Hi)
		}
		if b.Count > 0 && !(b.Confidence >= b.Lo && b.Confidence <= b.Hi) {
			t.Errorf("bin %d: mean confidence %v outside (%v, %v]", m, b.Confidence, b.Lo, b.Hi)
		}
		ece += float64(b.Count) / float64(n) * math.Abs(b.Accuracy-b.Confidence)
	}
	if sum != n {
		t.Errorf("counts sum to %d, want %d", sum, n)
	}
	if e := ECE(conf, correct, bins); math.Abs(e-ece) > 1e-12 {
		t.Errorf("ECE %v, from the reliability bins %v", e, ece)
	}
	if rb[0].Count == 0 || rb[bins-1].Count == 0 {
		t.Error("confidences 0 and 1 not in the first and last bins")
	}
	empty := ReliabilityBins(nil, nil, 3)
	for _, b := range empty {
		if b.Count != 0 || b.Confidence != 0 || b.Accuracy != 0 {
			t.Errorf("empty input: bin %+v", b)
		}
	}
}

// TestECEEdgeCases: NaN confidences give NaN, bad sizes panic.
func TestECEEdgeCases(t *testing.T) {
	if e := ECE([]float64{0.5, math.NaN()}, []bool{true, false}, 10); !math.IsNaN(e) {
		t.Errorf("ECE with a NaN confidence = %v, want NaN", e)
	}
	rb := ReliabilityBins([]float64{0.5, math.NaN()}, []bool{true, false}, 10)
	total := 0
	for _, b := range rb {
		total += b.Count
	}
	if total != 1 {
		t.Errorf("the NaN confidence was binned: %d items in bins", total)
	}
	panics := []struct {
		name string
		f    func()
	}{
		{"bins 0", func() { ECE([]float64{0.5}, []bool{true}, 0) }},
		{"lengths", func() { ECE([]float64{0.5}, nil, 10) }},
		{"weighted lengths", func() { ECEWeighted([]float64{0.5}, []float64{1}, []float64{1, 2}, 10) }},
		{"negative weight", func() { ECEWeighted([]float64{0.5}, []float64{1}, []float64{-1}, 10) }},
		{"NaN weight", func() { ECEWeighted([]float64{0.5}, []float64{1}, []float64{math.NaN()}, 10) }},
		{"reliability bins 0", func() { ReliabilityBins(nil, nil, 0) }},
	}
	for _, c := range panics {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			c.f()
		})
	}
}
