package cnn

import (
	"fmt"
	"strconv"
	"strings"
)

// Activation is the smooth non-linearity after every conv layer (and the dense hidden
// layer). SGLD needs input gradients, so only smooth activations are offered.
type Activation string

// Activations.
const (
	ActSwish Activation = "swish" // z·σ(z), the default (Grathwohl's advice for stable JEM training)
	ActTanh  Activation = "tanh"
)

// Spec is a convolutional model family member: Convs[l] output channels of 3×3 "same"
// conv layer l, each followed by Act and 2×2 average pooling, then an optional dense
// hidden layer of Dense units (0: none) and a dense head to K logits. The input is
// S×S×1 and the class count K are given separately (Train's Data, Params).
type Spec struct {
	Convs []int
	Dense int
	Act   Activation
}

// Parse parses "cnn:C1,C2,...[,dense:H][,swish|,tanh]", e.g. "cnn:16,32",
// "cnn:8,16,dense:64" or "cnn:16,tanh". The activation defaults to swish.
func Parse(s string) (Spec, error) {
	rest, ok := strings.CutPrefix(s, "cnn:")
	if !ok {
		return Spec{}, fmt.Errorf("cnn: model %q does not start with \"cnn:\"", s)
	}
	if rest == "" {
		return Spec{}, fmt.Errorf("cnn: model %q has no conv layers (want e.g. \"cnn:16,32\")", s)
	}
	sp := Spec{Act: ActSwish}
	seenAct, seenDense := false, false
	for i, f := range strings.Split(rest, ",") {
		switch {
		case f == "":
			return Spec{}, fmt.Errorf("cnn: model %q: empty field %d", s, i+1)
		case f == string(ActSwish) || f == string(ActTanh):
			if seenAct {
				return Spec{}, fmt.Errorf("cnn: model %q: activation given twice", s)
			}
			seenAct, sp.Act = true, Activation(f)
		case strings.HasPrefix(f, "dense:"):
			if seenDense {
				return Spec{}, fmt.Errorf("cnn: model %q: dense given twice", s)
			}
			n, err := strconv.Atoi(strings.TrimPrefix(f, "dense:"))
			if err != nil || n <= 0 {
				return Spec{}, fmt.Errorf("cnn: model %q: dense width %q is not a positive integer", s, strings.TrimPrefix(f, "dense:"))
			}
			seenDense, sp.Dense = true, n
		default:
			n, err := strconv.Atoi(f)
			if err != nil || n <= 0 {
				return Spec{}, fmt.Errorf("cnn: model %q: field %q is neither a positive channel count, dense:H, swish nor tanh", s, f)
			}
			if seenDense || seenAct {
				return Spec{}, fmt.Errorf("cnn: model %q: channel count %d after dense/activation; conv channels come first", s, n)
			}
			sp.Convs = append(sp.Convs, n)
		}
	}
	if len(sp.Convs) == 0 {
		return Spec{}, fmt.Errorf("cnn: model %q has no conv layers", s)
	}
	return sp, nil
}

// String is the canonical form, which Parse accepts.
func (sp Spec) String() string {
	var b strings.Builder
	b.WriteString("cnn:")
	for i, c := range sp.Convs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
	}
	if sp.Dense > 0 {
		fmt.Fprintf(&b, ",dense:%d", sp.Dense)
	}
	if sp.Act != "" && sp.Act != ActSwish {
		b.WriteString("," + string(sp.Act))
	}
	return b.String()
}

// Check reports whether the spec fits S×S images with K classes: every pooling needs an
// even side.
func (sp Spec) Check(S, K int) error {
	if S <= 0 || K < 2 {
		return fmt.Errorf("cnn: need side S > 0 and K >= 2 classes, got S=%d K=%d", S, K)
	}
	if len(sp.Convs) == 0 {
		return fmt.Errorf("cnn: spec has no conv layers")
	}
	if sp.Act != "" && sp.Act != ActSwish && sp.Act != ActTanh {
		return fmt.Errorf("cnn: unknown activation %q", sp.Act)
	}
	side := S
	for l := range sp.Convs {
		if side%2 != 0 {
			return fmt.Errorf("cnn: %s on %d×%d images: side %d before pooling %d is odd", sp, S, S, side, l+1)
		}
		side /= 2
	}
	return nil
}

// layerShapes lists the parameter shapes in order: per conv layer the kernel [9, Cin,
// Cout] and bias [Cout]; then dense hidden W [P, C, H], b [H] (if any); then the head
// W [P, C, K] (or [H, K]) and b [K], where P is the final number of pixels.
func (sp Spec) layerShapes(S, K int) [][]int {
	var out [][]int
	cin, side := 1, S
	for _, c := range sp.Convs {
		out = append(out, []int{9, cin, c}, []int{c})
		cin, side = c, side/2
	}
	P := side * side
	if sp.Dense > 0 {
		out = append(out, []int{P, cin, sp.Dense}, []int{sp.Dense}, []int{sp.Dense, K}, []int{K})
	} else {
		out = append(out, []int{P, cin, K}, []int{K})
	}
	return out
}

// NumParams is the number of scalar parameters for S×S images and K classes.
func (sp Spec) NumParams(S, K int) int {
	n := 0
	for _, s := range sp.layerShapes(S, K) {
		n += prod(s)
	}
	return n
}

func prod(dims []int) int {
	p := 1
	for _, d := range dims {
		p *= d
	}
	return p
}
