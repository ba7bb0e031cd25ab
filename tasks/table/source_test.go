package table

import (
	"testing"

	"github.com/jemcheck/jemcheck/models/kernel"
)

// TestPCDProposal: the proposal option's values map to the kernel's proposals, and any
// other (never reaching here for pcd: resolved away) to uniform, as before gwg.
func TestPCDProposal(t *testing.T) {
	for name, want := range map[string]kernel.Proposal{
		"uniform": kernel.ProposalUniform, "neighbour": kernel.ProposalNeighbour, "gwg": kernel.ProposalGWG, "": kernel.ProposalUniform,
	} {
		if got := pcdProposal(name); got != want {
			t.Errorf("%q: %v, want %v", name, got, want)
		}
	}
}
