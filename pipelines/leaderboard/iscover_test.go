package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/schemas"
)

// TestISCoverage: a board's importance-sampling coverage counts the runs with an exact
// log Z and an estimate, the covered (within 1.96 SE), the refused (misses, as a
// missing SE), and names the proposals; runs without an estimate or an exact log Z
// are not counted; the board's and the ladder's Markdown say it.
func TestISCoverage(t *testing.T) {
	row := func(task, prop string, exact, est, se float64, refused string) run {
		return run{ResultRow: schemas.ResultRow{Task: task, ISProposal: prop, LogZ: exact, LogZIS: est, LogZISSE: se, ISRefused: refused}}
	}
	const a, b = "blocks:1,gmm:3,2", "blocks:4,gmm:3,2"
	runs := []run{
		row(a, "adapted", 10, 10.1, 0.1, ""),                 // covered (z = 1)
		row(a, "adapted", 10, 10.3, 0.1, ""),                 // missed (z = 3)
		row(a, "adapted", 10, 10, math.NaN(), "ESS 3 < 100"), // refused
		row(a, "truth", 10, 9.95, 0.05, ""),                  // covered
		row(a, "", 10, 10, 0.1, ""),                          // no estimate: not counted
		row(a, "adapted", math.NaN(), 10, 0.1, ""),           // no exact log Z: not counted
		row(b, "adapted", 5, 5, 0.01, ""),
	}
	c := isCoverage(runs)
	if got := c[a]; got != (ISCoverage{Runs: 4, Covered: 2, Refused: 1, Proposal: "adapted+truth"}) {
		t.Errorf("%s: %+v", a, got)
	}
	if got := c[b]; got.Runs != 1 || got.Covered != 1 || got.Share() != 1 {
		t.Errorf("%s: %+v", b, got)
	}
	if !math.IsNaN((ISCoverage{}).Share()) {
		t.Error("no runs: share not NaN")
	}
	ca, cb := c[a], c[b]
	bs := []Board{{Family: a, IS: &ca, Rows: []Row{{Entry: "sgld", Rank: 1, Excess: 1}}}, {Family: b, IS: &cb, Rows: []Row{{Entry: "sgld", Rank: 1, Excess: 2}}}}
	var md bytes.Buffer
	writeBoards(&md, bs)
	if !strings.Contains(md.String(), "holds it for 2 of 4 runs (50%; 1 refused") {
		t.Errorf("board Markdown:\n%s", md.String())
	}
	md.Reset()
	writeLadders(&md, ladders(bs))
	if !strings.Contains(md.String(), "D = 2: 2 of 4 (1 refused; adapted+truth); D = 8: 1 of 1 (0 refused; adapted)") {
		t.Errorf("ladder Markdown:\n%s", md.String())
	}
}
