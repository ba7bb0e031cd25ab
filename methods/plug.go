package methods

import (
	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/cnn"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// Plug is a typed plug point: the type H of the hook a task kind calls to set up a
// method's training from a point's options, and the kind that calls it. A method
// plugs into the kinds it trains on with Plug.Hook (Method.Hooks); a kind looks its
// hook up with Plug.Of, typed, so a hook of the wrong type does not compile. Each
// kind's plug is declared below, next to its hook's type.
type Plug[H any] struct {
	// Name names the plug (a kind's name, or KIND.NAME for a kind's further hook).
	Name string
	// Kind is the task kind a hook at the plug trains on ("" for a further hook of
	// a kind that is not a way to train: the plane's sampler).
	Kind string
}

// Hook is a method's hook at one plug (made by Plug.Hook).
type Hook struct {
	plug, kind string
	fn         any
}

// Hook is the method's hook fn at the plug.
func (p Plug[H]) Hook(fn H) Hook { return Hook{plug: p.Name, kind: p.Kind, fn: fn} }

// Of is the named method's hook at the plug, and whether it has one.
func (p Plug[H]) Of(method string) (H, bool) {
	var zero H
	m, ok := Lookup(method)
	if !ok {
		return zero, false
	}
	for _, h := range m.Hooks {
		if h.plug == p.Name {
			f, ok := h.fn.(H)
			return f, ok
		}
	}
	return zero, false
}

// The kinds' plugs.
var (
	// Plane: a 2-D task (tasks/plane). The hook sets the method's part of the fused
	// trainer's spec: its kernel.Objective (Spec2D.Objective), or the kernel's own
	// terms (exact JEM's normaliser), and its options; the point's shared settings
	// (model, steps, batch, rate, px weight, box) are set before it is called.
	Plane = Plug[func(schemas.Grid, *kernel.Spec2D) error]{Name: KindPlane, Kind: KindPlane}
	// Blocks: a block task in D = 2B dimensions (tasks/blocks), the same hook type as
	// Plane's (the block-additive and joint trainers run the same objectives); the
	// images kind's MFA model (tasks/images, --model=mfa:C,d) trains with these hooks
	// too, its objectives in D = S² coordinates (tasks.MethodKinder).
	Blocks = Plug[func(schemas.Grid, *kernel.Spec2D) error]{Name: KindBlocks, Kind: KindBlocks}
	// Bits: a binary table (tasks/bits): the hook sets kernel.SpecBits's method part.
	Bits = Plug[func(schemas.Grid, *kernel.SpecBits) error]{Name: KindBits, Kind: KindBits}
	// Tables: a categorical table (tasks/table): the hook sets the method's part of a
	// run of the table trainer, whose shared settings (counts, rate, seed, the point's
	// px weight) are set before it is called: its persistent-chain sampler (PCD, from
	// the run's Seed; nil for the exact log Z) and its log q(x) weight (PxWeight).
	Tables = Plug[func(schemas.Grid, *models.Run) error]{Name: KindTable, Kind: KindTable}
	// Images: an image-like task (tasks/images): the hook sets the CNN's training
	// options.
	Images = Plug[func(schemas.Grid, *cnn.TrainOptions) error]{Name: KindImages, Kind: KindImages}
	// PlaneSampler: the sampler a 2-D run's own distribution is measured with (tasks/
	// plane's sampler-distribution measure reruns it from fresh starts on the trained
	// model); not a way to train.
	PlaneSampler = Plug[func(schemas.Grid) kernel.Chain2D]{Name: KindPlane + ".sampler"}
)
