package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/stages/render"
	"github.com/jemcheck/jemcheck/verdict"
)

// fmtNum is a number to 3 significant digits ("—" for NaN).
func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "∞"
	case v == 0:
		return "0"
	case math.Abs(v) >= 1e5 || math.Abs(v) < 1e-3:
		return fmt.Sprintf("%.2e", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// writeBoards writes every board as Markdown: the ranked recipes first (by mean
// excess; ≈ marks the set indistinguishable from the best, ◆ the frontier), then the
// references, and the board's statistics (statsText).
func writeBoards(w io.Writer, bs []Board) {
	for _, b := range bs {
		m, _ := metricNamed(b.Metric)
		if m.Excess {
			fmt.Fprintf(w, "\n### %s\n\nexact jem (the yardstick) %s nats from the truth; budget-matched view at %s gradient evaluations per run (the cheapest recipe's).\n\n",
				b.Family, fmtNum(b.JEMKL), fmtNum(b.Budget))
		} else {
			fmt.Fprintf(w, "\n### %s\n\nranked by %s (%s; lower is better), paired by task; no exact jem on this board.\n\n", b.Family, m.Name, m.Header)
		}
		fmt.Fprintf(w, "| rank | recipe | %s [95%% CI] | over the best [95%% CI] | Holm p vs best | detectable from the best | budget-matched excess | unstable | grad evals / run | CPU s / run | tasks × seeds |\n", m.Header)
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
		for _, r := range b.Rows {
			rank, over, p, mde := "ref.", "", "", ""
			if r.Rank > 0 {
				rank = fmt.Sprint(r.Rank)
				if r.BestSet {
					rank += " ≈"
				}
				over = fmt.Sprintf("%s [%s, %s]", fmtSigned(r.OverBest), fmtSigned(r.OverBestLo), fmtSigned(r.OverBestHi))
				p, mde = fmtNum(r.PHolm), fmtNum(r.MDE)
				if math.IsInf(r.MDE, 1) {
					mde = "none at this n"
				}
				if r.Entry == b.Best {
					over, p, mde = "best", "—", "—"
				}
			}
			name := r.Entry
			if r.Tuned != "" {
				name += " (" + r.Tuned + ")"
			}
			if r.Frontier {
				name += " ◆"
			}
			unstable := fmt.Sprint(r.Unstable)
			if r.Unstable < 0 {
				unstable = "n/a"
			}
			if r.Diverged > 0 {
				unstable += fmt.Sprintf(" (%d diverged)", r.Diverged)
			}
			val := fmtSigned
			if !m.Excess { // a value, not an excess: no sign
				val = fmtNum
			}
			fmt.Fprintf(w, "| %s | %s | %s [%s, %s] | %s | %s | %s | %s | %s | %s | %s | %d |\n", rank, name, val(r.Excess), val(r.Lo), val(r.Hi),
				over, p, mde, fmtSigned(r.BudgetExcess), unstable, fmtNum(r.GradEvals), fmtNum(r.CPUSeconds), r.Units)
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, statsText(b))
		writeISCoverage(w, b.IS)
	}
}

// fmtSigned is fmtNum with an explicit sign.
func fmtSigned(v float64) string {
	if v > 0 {
		return "+" + fmtNum(v)
	}
	return fmtNum(v)
}

// statsText says what the board's data support: the set indistinguishable from the
// best, the Friedman test with the critical-difference diagram in words (average ranks
// and the groups closer than CD), and the smallest difference the board can detect.
func statsText(b Board) string {
	var set, ranked []string
	for _, r := range b.Rows {
		if r.Rank == 0 {
			continue
		}
		ranked = append(ranked, r.Entry)
		if r.BestSet {
			set = append(set, r.Entry)
		}
	}
	if len(ranked) == 0 {
		return ""
	}
	var sb strings.Builder
	rest := fmt.Sprintf("every other recipe is worse than the best at family-wise α = %s", fmtNum(verdict.RankAlpha))
	if len(set) == len(ranked) {
		rest = "no recipe is distinguishable from the best"
	}
	fmt.Fprintf(&sb, "Indistinguishable from the best (%s; ≈ in the rank column): {%s} — each recipe's two-sided paired Wilcoxon test against the best, Holm-corrected over the %d comparisons with the best, p ≥ %s; %s.\n\n",
		b.Best, strings.Join(set, ", "), max(len(ranked)-1, 0), fmtNum(verdict.RankAlpha), rest)
	f := b.Friedman
	if f.N >= 2 && f.K >= 2 {
		fmt.Fprintf(&sb, "Friedman test over the %d ranked recipes on the %d tasks × seeds every one has: χ² = %s (%d d.f.), p = %s; Iman–Davenport F = %s (%d, %d d.f.), p = %s. ",
			f.K, f.N, fmtNum(f.ChiSq), f.K-1, fmtNum(f.P), fmtNum(f.F), f.K-1, (f.K-1)*(f.N-1), fmtNum(f.FP))
		fmt.Fprintf(&sb, "Nemenyi critical difference CD = %s average ranks (α = %s); %s.\n\n", fmtNum(f.CD), fmtNum(f.Alpha), cdText(b))
		if svg, err := cdFigure(b); err == nil && svg != nil {
			fmt.Fprintf(&sb, "![critical-difference diagram of %s](%s)\n\n", b.Family, cdFile(b.Family))
		}
	} else {
		fmt.Fprintf(&sb, "Friedman test: too few tasks every ranked recipe has (%d).\n\n", f.N)
	}
	if svg, err := costFigure(b); err == nil && svg != nil {
		fmt.Fprintf(&sb, "![cost curves of %s: every entry's mean excess over exact jem at its checks against the gradient evaluations spent, the frontier (◆) joined](%s)\n\n", b.Family, costFile(b.Family))
	}
	bm, _ := metricNamed(b.Metric)
	switch m := max(len(ranked)-1, 1); {
	case math.IsInf(b.MDE, 1):
		fmt.Fprintf(&sb, "At n = %d tasks × seeds the board cannot detect any difference from the best: the exact signed-rank test's smallest p there, 2/2^%d = %s, exceeds α/(k−1) = %s (family-wise α = %s, Bonferroni over the %d comparisons with the best); it needs more tasks × seeds.\n",
			b.Tasks, b.Tasks, fmtNum(math.Ldexp(2, -b.Tasks)), fmtNum(verdict.RankAlpha/float64(m)), fmtNum(verdict.RankAlpha), m)
	case !math.IsNaN(b.MDE):
		fmt.Fprintf(&sb, "At n = %d tasks × seeds the board can detect a difference from the best of %s (80%% power, family-wise α = %s, Bonferroni over the %d comparisons with the best; the median over recipes of (z₁₋α/(2(k−1)) + z₀.₈)·sd(d)/√n, sd(d) the observed spread of a recipe's paired differences to the best); smaller true differences may go unseen.\n",
			b.Tasks, strings.TrimSpace(fmtNum(b.MDE)+" "+bm.Unit), fmtNum(verdict.RankAlpha), m)
	}
	return sb.String()
}

// cdFile is the name of a board's critical-difference diagram (an output of report).
func cdFile(family string) string {
	var sb strings.Builder
	dash := false
	for _, c := range strings.ToLower(family) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			sb.WriteRune(c)
			dash = false
		} else if !dash && sb.Len() > 0 {
			sb.WriteByte('-')
			dash = true
		}
	}
	return "leaderboard-cd-" + strings.TrimSuffix(sb.String(), "-") + ".svg"
}

// cdFigure is a board's critical-difference diagram (render.CDDiagram) of its ranked
// recipes; nil when there is none to draw (fewer than two recipes, no finite CD).
func cdFigure(b Board) ([]byte, error) {
	var names []string
	var ranks []float64
	var inSet []bool
	for _, r := range b.Rows {
		if r.Rank > 0 {
			names, ranks, inSet = append(names, r.Entry), append(ranks, r.AvgRank), append(inSet, r.BestSet)
		}
	}
	return render.CDDiagram(b.Family+": average ranks (Friedman), bars join recipes closer than CD", names, ranks, inSet, b.Friedman.CD)
}

// costFile is the name of a board's cost-curve figure (an output of report).
func costFile(family string) string {
	return "leaderboard-cost-" + strings.TrimPrefix(strings.TrimSuffix(cdFile(family), ".svg"), "leaderboard-cd-") + ".svg"
}

// costFigure is a board's cost curves (render.CostCurves): every entry's mean excess
// over exact jem at its checks against the gradient evaluations spent, the frontier
// joined; nil when no entry has a curve.
func costFigure(b Board) ([]byte, error) {
	var cs []render.CostCurve
	for _, r := range b.Rows {
		cs = append(cs, render.CostCurve{Name: r.Entry, Evals: r.CostEvals, Excess: r.CostExcess, Frontier: r.Frontier})
	}
	return render.CostCurves(b.Family+": excess joint KL over exact JEM against gradient evaluations", cs)
}

// cdText is the critical-difference diagram in words: the recipes by average rank and
// the groups whose average ranks differ by less than CD (verdict.CDBars).
func cdText(b Board) string {
	type ar struct {
		name string
		avg  float64
	}
	var rs []ar
	for _, r := range b.Rows {
		if r.Rank > 0 && !math.IsNaN(r.AvgRank) {
			rs = append(rs, ar{r.Entry, r.AvgRank})
		}
	}
	slices.SortStableFunc(rs, func(a, c ar) int { return cmp.Compare(a.avg, c.avg) })
	var parts, groups []string
	avg := make([]float64, len(rs))
	for i, r := range rs {
		parts = append(parts, fmt.Sprintf("%s %.2f", r.name, r.avg))
		avg[i] = r.avg
	}
	for _, bar := range verdict.CDBars(avg, b.Friedman.CD) {
		var g []string
		for _, r := range rs[bar[0] : bar[1]+1] {
			g = append(g, r.name)
		}
		groups = append(groups, "{"+strings.Join(g, ", ")+"}")
	}
	out := "average ranks (1 = best): " + strings.Join(parts, ", ")
	if len(groups) == 0 {
		return out + "; no two recipes' average ranks are closer than CD"
	}
	return out + "; not distinguishable (average ranks closer than CD): " + strings.Join(groups, ", ")
}

// jsonSafe is v as a JSON tree whose non-finite numbers are null (a NaN mean or CI:
// too few runs, or none finite).
func jsonSafe(v any) any {
	return safeValue(reflect.ValueOf(v))
}

func safeValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = safeValue(v.Index(i))
		}
		return out
	case reflect.Map:
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			out[fmt.Sprint(k.Interface())] = safeValue(v.MapIndex(k))
		}
		return out
	case reflect.Struct:
		out := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			out[name] = safeValue(v.Field(i))
		}
		return out
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return safeValue(v.Elem())
	}
	return v.Interface()
}
