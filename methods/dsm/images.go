package dsm

import (
	"fmt"
	"math"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/schemas"
)

// images is the hook tasks/images calls: the CNN's denoising score matching (cnn.DSM),
// cross-entropy plus px_weight times ½·mean ‖σ∇ℓ(x̃) + ε‖² at the point's dsm_sigma,
// exact: the score is the CNN's input gradient and its parameter gradient double
// backprop, so dsm_h (the 2-D finite-difference step) does not apply and a value other
// than its default is refused.
func images(g schemas.Grid, o *cnn.TrainOptions) error {
	var opt Options
	methods.Decode(g, &opt)
	switch {
	case !(opt.Sigma > 0) || math.IsInf(opt.Sigma, 0):
		return fmt.Errorf("dsm_sigma must be a finite number > 0, got %v", opt.Sigma)
	case opt.H != defaults.H:
		return fmt.Errorf("dsm_h does not apply on images: the CNN's DSM takes the exact score (its input gradient), no finite differences (leave dsm_h at %v)", defaults.H)
	}
	w, err := methods.PxWeight(g, Name)
	if err != nil {
		return err
	}
	o.Objective, o.PxWeight = cnn.DSM{Sigma: opt.Sigma}, w
	return nil
}
