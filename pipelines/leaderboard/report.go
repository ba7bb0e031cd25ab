package main

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
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

// writeBoards writes every board as Markdown: the ranked recipes first (rank groups,
// the frontier marked ◆), then the references.
func writeBoards(w io.Writer, bs []Board) {
	for _, b := range bs {
		fmt.Fprintf(w, "\n### %s\n\nexact jem (the yardstick) %s nats from the truth; budget-matched view at %s gradient evaluations per run (the cheapest recipe's).\n\n",
			b.Family, fmtNum(b.JEMKL), fmtNum(b.Budget))
		fmt.Fprintln(w, "| rank | recipe | excess over exact jem, nats [95% CI] | budget-matched excess | unstable | grad evals / run | CPU s / run | tasks × seeds |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, r := range b.Rows {
			rank := "ref."
			if r.Rank > 0 {
				rank = fmt.Sprint(r.Rank)
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
			fmt.Fprintf(w, "| %s | %s | %s [%s, %s] | %s | %s | %s | %s | %d |\n", rank, name, fmtSigned(r.Excess), fmtSigned(r.Lo), fmtSigned(r.Hi),
				fmtSigned(r.BudgetExcess), unstable, fmtNum(r.GradEvals), fmtNum(r.CPUSeconds), r.Units)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, groupSentence(b))
	}
}

// fmtSigned is fmtNum with an explicit sign.
func fmtSigned(v float64) string {
	if v > 0 {
		return "+" + fmtNum(v)
	}
	return fmtNum(v)
}

// groupSentence says what order the rank groups support.
func groupSentence(b Board) string {
	var groups [][]string
	last := -1
	for _, r := range b.Rows {
		if r.Rank == 0 {
			continue
		}
		if r.Group != last {
			groups = append(groups, nil)
			last = r.Group
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], r.Entry)
	}
	var parts []string
	for _, g := range groups {
		if len(g) == 1 {
			parts = append(parts, g[0])
		} else {
			parts = append(parts, "{"+strings.Join(g, " ≈ ")+"}")
		}
	}
	return "Rank groups (Holm-corrected paired Wilcoxon, α = 0.05; ≈ within a group: not distinguishable): " + strings.Join(parts, " < ") + "."
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
