package ed

import (
	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/schemas"
)

// images is the hook tasks/images calls: the CNN's Energy Discrepancy (cnn.ED),
// cross-entropy plus px_weight times the ED term with the point's ed_m, ed_t and ed_w
// (w = 0 passes as 1e-30, which cnn reads as w = 0, since it reads 0 as its default).
// The 2-D default t = 1 is the variance per pixel: on images of pixel scale about 1 in
// D = 64 or more dimensions its negatives lie far from the data and the term's gradient
// nearly vanishes; a t of 0.01 to 0.1 is the useful range there (docs/methods.md).
func images(g schemas.Grid, o *cnn.TrainOptions) error {
	if err := validate(g); err != nil {
		return err
	}
	w, err := methods.PxWeight(g, Name)
	if err != nil {
		return err
	}
	o.Objective, o.PxWeight = cnn.ED{M: g.EDNegatives, T: g.EDT, W: max(g.EDW, 1e-30)}, w
	return nil
}
