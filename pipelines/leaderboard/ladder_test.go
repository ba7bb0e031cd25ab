package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/stages"
)

// TestLadders: the per-task boards of one family at several dimensions become its
// ladder (dimensions sorted, each entry's excess, CI and rank per D; NaN where it did
// not run), a family at one dimension and the pooled board have none, and the ladder's
// figure and Markdown name every dimension.
func TestLadders(t *testing.T) {
	row := func(e string, rank int, ex float64) Row {
		return Row{Entry: e, Rank: rank, Excess: ex, Lo: ex - 0.1, Hi: ex + 0.1, BestSet: rank == 1}
	}
	bs := []Board{
		{Family: "blocks:4,gmm:3,2", Rows: []Row{row("sgld", 2, 0.8), row("nce", 1, 0.5), row("baseline", 0, 3)}},
		{Family: "blocks:1,gmm:3,2", Rows: []Row{row("sgld", 1, 0.1), row("baseline", 0, 1), row("pcd", 0, math.NaN())}},
		{Family: "blocks:2,moons:0.1", Rows: []Row{row("sgld", 1, 0.2)}},
		{Family: "bits:8,2", Rows: []Row{row("pcd", 1, 0.05)}},
		{Family: "bits:12,2", Rows: []Row{row("pcd", 1, 0.09)}},
		{Family: "all", Rows: []Row{row("sgld", 1, 0.4)}},
	}
	ls := ladders(bs)
	if len(ls) != 2 {
		t.Fatalf("%d ladders, want 2 (blocks gmm, bits): %+v", len(ls), ls)
	}
	var blocks Ladder
	for _, l := range ls {
		if strings.HasPrefix(l.Family, "blocks") {
			blocks = l
		}
	}
	if len(blocks.Dims) != 2 || blocks.Dims[0] != 2 || blocks.Dims[1] != 8 {
		t.Fatalf("blocks ladder dims %v, want [2 8]", blocks.Dims)
	}
	byName := map[string]LadderRung{}
	for _, r := range blocks.Rows {
		byName[r.Entry] = r
	}
	if s := byName["sgld"]; s.Excess[0] != 0.1 || s.Excess[1] != 0.8 || s.Rank[1] != 2 || !s.Sampler {
		t.Errorf("sgld rung %+v", s)
	}
	if n := byName["nce"]; !math.IsNaN(n.Excess[0]) || n.Excess[1] != 0.5 || !n.BestSet[1] {
		t.Errorf("nce rung %+v", n)
	}
	if _, ok := byName["pcd"]; ok { // on the board (another kind's entry) but run at no D of this family
		t.Error("an entry without any value has a ladder row")
	}
	if b := byName["baseline"]; b.Sampler {
		t.Errorf("baseline ranked on the ladder: %+v", b)
	}
	var md bytes.Buffer
	writeLadders(&md, ls)
	for _, want := range []string{"D = 2", "D = 8", "+0.8 [+0.7, +0.9] (2)", "+0.5 [+0.4, +0.6] (1 ≈)", ladderFile(blocks.Family)} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	svg, err := ladderFigure(blocks)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("figure: %v, %d bytes", err, len(svg))
	}
}

// TestOutputNames: every name report and pick write is one of LeaderboardOutputs, so a
// second run into the same folder may replace it (a name outside it reads as a user's
// file the manifest should not list: the second report was refused).
func TestOutputNames(t *testing.T) {
	for _, name := range []string{ladderFile("blocks:·,gmm:3,2"), ladderFile("bits:·,2"), cdFile("blocks:4,gmm:3,2"), costFile("bits:8,2"),
		"leaderboard.md", "leaderboard.json", "picks.json", "picks.md", "tuned-ed.yaml", "tuned-jem-converged-bits-16-2.yaml"} {
		if !stages.LeaderboardOutputs.MatchString(name) {
			t.Errorf("%s is not a leaderboard output name", name)
		}
	}
}
