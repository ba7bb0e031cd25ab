package nce

import (
	"fmt"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/schemas"
)

// images is the hook tasks/images calls: the CNN's noise-contrastive estimation
// (cnn.NCE), cross-entropy plus px_weight times the NCE loss with nce_nu noise draws a
// point from the Gaussian with the mean and full covariance of the run's training draws
// (times nce_inflate) and a learned log normaliser c. nce_noise=uniform does not apply:
// an image task has no box to be uniform on (the AUROC's uniform draws on [0, 1]^D are
// an out-of-distribution probe, not a support).
func images(g schemas.Grid, o *cnn.TrainOptions) error {
	var opt Options
	methods.Decode(g, &opt)
	if err := opt.check(); err != nil {
		return err
	}
	switch {
	case opt.Noise != NoiseGaussian:
		return fmt.Errorf("nce_noise=%s does not apply on images: the noise there is the Gaussian fitted to the training draws (nce_noise=gaussian)", opt.Noise)
	}
	w, err := methods.PxWeight(g, Name)
	if err != nil {
		return err
	}
	o.Objective, o.PxWeight = cnn.NCE{Nu: opt.Nu, Inflate: opt.Inflate}, w
	return nil
}
