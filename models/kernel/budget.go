package kernel

// GradEvalsPerStep is the model's forward+backward passes per point in one training
// step of the spec: the unit of the protocol's matched budgets. Each point pushed
// through the network and back, for the parameters' gradient or for ∇x, counts one:
//
//	baseline    B                       the data
//	jem         B + G²                  the data and the training grid's nodes
//	sgld        B + B + B·steps         data, negatives, and each SGLD step's ∇x
//	mala        B + B + B·(1 + steps)   data, negatives, the chains' energy, each proposal
//	jarzynski   B + B + B·(1 + steps)   data, walkers, the walkers' energy, each move
//	shortrun    B + B + B·steps         data, negatives, each Langevin step
//	ed          B·(1 + M)               the data and its M perturbations each
//
// (jarzynski's rare restarts from uniform noise, one energy pass, are not counted).
func (s Spec2D) GradEvalsPerStep() int64 {
	B := int64(s.Batch)
	if s.Objective != nil {
		o := s.Objective()
		return int64(o.Lanes(s.Batch)) + o.GradEvals(s.Batch)
	}
	switch s.Method {
	case Baseline2D:
		return B
	case JEM2D:
		g := int64(s.trainGrid())
		return B + g*g
	case SGLD2D:
		return 2*B + B*int64(s.SGLD.Steps)
	case MALA2D, Jarzynski2D:
		return 2*B + B*int64(1+s.Langevin.Steps)
	case ShortRun2D:
		return 2*B + B*int64(s.Langevin.Steps)
	case ED2D:
		return B * int64(1+s.ED.M)
	}
	return 0
}
