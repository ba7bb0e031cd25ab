package kernel

// GradEvalsPerStep is the model's forward+backward passes per point in one training
// step of the spec on points of D coordinates (an objective's lanes may depend on D:
// dsm's finite differences): the unit of the protocol's matched budgets. Each point pushed
// through the network and back, for the parameters' gradient or for ∇x, counts one:
//
//	baseline    B                       the data
//	jem         B + G²                  the data and the training grid's nodes (Exact)
//	objective   P + GradEvals(B)        its lanes, and its own passes beyond them
//
// (an objective's lanes and its GradEvals: sgld B + B + B·steps, the data, negatives
// and each SGLD step's ∇x; mala and jarzynski B + B + B·(1 + steps); ed B·(1 + M); …).
func (s Spec2D) GradEvalsPerStep(D int) int64 {
	B := int64(s.Batch)
	switch {
	case s.Objective != nil:
		o := s.Objective()
		return int64(o.Lanes(s.Batch, D)) + o.GradEvals(s.Batch)
	case s.Exact:
		g := int64(s.trainGrid())
		return B + g*g
	}
	return B
}

// GradEvalsPerStep is a binary spec's forward+backward passes a step (Spec2D's
// count): the batch, an objective's lanes and extra passes, or exact JEM's 2^D
// enumerated states.
func (s SpecBits) GradEvalsPerStep() int64 {
	B := int64(s.Batch)
	switch {
	case s.Objective != nil:
		o := s.Objective()
		return int64(o.Lanes(s.Batch, s.D)) + o.GradEvals(s.Batch)
	case s.Exact:
		return B + int64(1)<<s.D
	}
	return B
}
