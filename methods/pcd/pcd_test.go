package pcd

import (
	"testing"

	"github.com/jemcheck/jemcheck/models"
	"github.com/jemcheck/jemcheck/models/kernel"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestTableProposal: the proposal option's values map to the kernel's proposals, and any
// other (refused by Validate) to uniform; the seed, negatives and averaging follow the
// point.
func TestTableProposal(t *testing.T) {
	for name, want := range map[string]kernel.Proposal{
		"uniform": kernel.ProposalUniform, "neighbour": kernel.ProposalNeighbour, "gwg": kernel.ProposalGWG, "": kernel.ProposalUniform,
	} {
		r := models.Run{Seed: 7, PxWeight: 1}
		err := Table(false)(schemas.Grid{Proposal: name, Steps: 300, BufferSize: 100}, &r)
		got := r.PCD
		if err != nil || got == nil || r.PxWeight != 1 || got.Proposal != want || got.Negatives != 64 || got.AverageLast != 30 || got.Exact {
			t.Errorf("%q: %+v, %v; want proposal %v, 64 negatives, averaging 30", name, got, err, want)
		}
	}
	if err := Validate(schemas.Grid{Proposal: "metropolis", BufferSize: 10}); err == nil {
		t.Error("an unknown proposal passed")
	}
}
