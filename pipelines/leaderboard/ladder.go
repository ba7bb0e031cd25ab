package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages/render"
	"github.com/jemcheck/jemcheck/tasks"
)

// Ladder is a family's dimension ladder on the leaderboard: the boards of its tasks
// at two or more dimensions D (a block task's 2B, a binary task's D), each entry's
// excess over exact jem at each D with its CI and its rank there (the per-task boards
// carry the statistics).
type Ladder struct {
	Family string       `json:"family"`
	Dims   []int        `json:"dims"`
	Tasks  []string     `json:"tasks"` // the board (task) of each dimension
	Rows   []LadderRung `json:"rows"`
	// IS is each dimension's importance-sampling coverage of the exact log Z (its
	// board's; Runs 0 where it has none).
	IS []ISCoverage `json:"is_coverage,omitempty"`
}

// LadderRung is an entry's line on a ladder: per dimension (NaN, rank 0 where it did
// not run).
type LadderRung struct {
	Entry   string    `json:"entry"`
	Sampler bool      `json:"ranked"`
	Excess  []float64 `json:"excess"`
	Lo      []float64 `json:"excess_lo"`
	Hi      []float64 `json:"excess_hi"`
	Rank    []int     `json:"rank"`
	BestSet []bool    `json:"indistinguishable_from_best"`
}

// ladders groups the per-task boards into their families' ladders (tasks.Kind's
// Family and Dimension); a family at one dimension has none.
func ladders(bs []Board) []Ladder {
	type at struct {
		d int
		b Board
	}
	fams := map[string][]at{}
	for _, b := range bs {
		k, err := tasks.Of(b.Family)
		if err != nil {
			continue // "all", or a task no kind owns
		}
		p := tasks.Point{Grid: schemas.Grid{Task: b.Family}}
		if d := k.Dimension(p); d > 0 {
			fams[k.Family(p)] = append(fams[k.Family(p)], at{d, b})
		}
	}
	var out []Ladder
	for f, ats := range fams {
		slices.SortFunc(ats, func(a, b at) int { return cmp.Compare(a.d, b.d) })
		ats = slices.CompactFunc(ats, func(a, b at) bool { return a.d == b.d }) // one board a dimension
		if len(ats) < 2 {
			continue
		}
		l := Ladder{Family: f}
		idx := map[string]int{}
		for j, a := range ats {
			l.Dims, l.Tasks = append(l.Dims, a.d), append(l.Tasks, a.b.Family)
			var c ISCoverage
			if a.b.IS != nil {
				c = *a.b.IS
			}
			l.IS = append(l.IS, c)
			for _, r := range a.b.Rows {
				i, ok := idx[r.Entry]
				if !ok {
					i = len(l.Rows)
					idx[r.Entry] = i
					n := len(ats)
					row := LadderRung{Entry: r.Entry, Excess: nans(n), Lo: nans(n), Hi: nans(n), Rank: make([]int, n), BestSet: make([]bool, n)}
					l.Rows = append(l.Rows, row)
				}
				row := &l.Rows[i]
				row.Sampler = row.Sampler || r.Rank > 0
				row.Excess[j], row.Lo[j], row.Hi[j], row.Rank[j], row.BestSet[j] = r.Excess, r.Lo, r.Hi, r.Rank, r.BestSet
			}
		}
		l.Rows = slices.DeleteFunc(l.Rows, func(r LadderRung) bool { // an entry that ran at no D of this family
			return !slices.ContainsFunc(r.Excess, func(v float64) bool { return !math.IsNaN(v) })
		})
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Ladder) int { return cmp.Compare(a.Family, b.Family) })
	return out
}

func nans(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// writeLadders writes each ladder as Markdown: a row per entry, a column per
// dimension, each cell the excess over exact jem [95% CI] and the rank there (≈: not
// distinguishable from that dimension's best).
func writeLadders(w io.Writer, ls []Ladder) {
	for _, l := range ls {
		fmt.Fprintf(w, "\n### Ladder: %s\n\nExcess joint KL over exact jem at each dimension D, nats [95%% CI] (rank at that D; ≈ not distinguishable from its best); figure %s.\n\n",
			l.Family, ladderFile(l.Family))
		head := []string{"recipe"}
		for _, d := range l.Dims {
			head = append(head, fmt.Sprintf("D = %d", d))
		}
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, r := range l.Rows {
			cells := []string{r.Entry}
			for j := range l.Dims {
				c := "—"
				if !math.IsNaN(r.Excess[j]) {
					c = fmt.Sprintf("%s [%s, %s]", fmtSigned(r.Excess[j]), fmtSigned(r.Lo[j]), fmtSigned(r.Hi[j]))
					switch {
					case r.Rank[j] > 0 && r.BestSet[j]:
						c += fmt.Sprintf(" (%d ≈)", r.Rank[j])
					case r.Rank[j] > 0:
						c += fmt.Sprintf(" (%d)", r.Rank[j])
					}
				}
				cells = append(cells, c)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		var cov []string
		for j, c := range l.IS {
			if c.Runs > 0 {
				cov = append(cov, fmt.Sprintf("D = %d: %d of %d (%d refused; %s)", l.Dims[j], c.Covered, c.Runs, c.Refused, c.Proposal))
			}
		}
		if len(cov) > 0 {
			fmt.Fprintf(w, "\nImportance-sampled log Z within 1.96 SE of the exact, refusals counted as misses: %s.\n", strings.Join(cov, "; "))
		}
	}
}

// ladderFile is the file name of a ladder's figure.
func ladderFile(family string) string {
	return "leaderboard-ladder-" + strings.TrimPrefix(strings.TrimSuffix(cdFile(family), ".svg"), "leaderboard-cd-") + ".svg"
}

// ladderFigure draws a ladder's ranked entries (render.LadderBoard).
func ladderFigure(l Ladder) ([]byte, error) {
	var lines []render.LadderLine
	for _, r := range l.Rows {
		if r.Sampler {
			lines = append(lines, render.LadderLine{Name: r.Entry, Excess: r.Excess, Lo: r.Lo, Hi: r.Hi})
		}
	}
	return render.LadderBoard("excess over exact JEM along D: "+l.Family, l.Dims, lines)
}
