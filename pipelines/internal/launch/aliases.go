package launch

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

// RefFlag is a flag of the reference implementation (wgrathwohl/JEM train_wrn_ebm.py,
// eval_wrn_ebm.py) and what jemcheck does with it.
type RefFlag struct {
	// Name is the reference implementation's flag.
	Name string
	// Flag is jemcheck's flag of the same meaning: the same name, or a flag Name is an
	// alias of (its key in a sweep spec too). "" where jemcheck has none; Note is then
	// the hint a user who gives Name gets.
	Flag string
	// Note says how the two compare (or, with no Flag, what to do instead).
	Note string
}

// Alias reports whether Name is an alias of jemcheck's Flag.
func (r RefFlag) Alias() bool { return r.Flag != "" && r.Flag != r.Name }

// RefFlags is the one table of the reference implementation's flags: the aliases the
// control and regress commands accept (and the sweep spec's keys), the flags whose
// names are already jemcheck's, and the hint for each flag jemcheck does not take.
// docs/flags.md's alias table is ReferenceFlagsMarkdown (a test checks it).
var RefFlags = []RefFlag{
	{"n_steps", "sgld_steps", "SGLD steps per training step (also the sampler steps of mala, jarzynski and shortrun)"},
	{"p_x_weight", "jem_px_weight", "weight of the log p(x) term (jemcheck: of jem, oracle and the samplers)"},
	{"sgld_lr", "sgld_lr", "the same step: x ← x + sgld_lr·∇x logsumexp_y f(x) + sgld_std·ε"},
	{"sgld_std", "sgld_std", "the same noise; 0 (jemcheck's default) takes --sgld_preset's: 0.01 for official, √(2·sgld_lr) for langevin"},
	{"buffer_size", "buffer_size", "the same replay buffer (per run); default 10000 in both"},
	{"reinit_freq", "reinit_freq", "the same per-chain restart probability; the restarts are uniform on the box [−box, box]² (reference: U(−1, 1) images)"},
	{"batch_size", "batch_size", "the same minibatch (data and SGLD negatives per step); 0 = full batch on a table's cell counts"},
	{"lr", "lr", "the same Adam learning rate; jemcheck's is constant (no warm-up, no decay)"},
	{"eval_every", "eval_every", "same name, other meaning: 2-D tasks' exact KL every this many steps (reference: epochs between validations)"},
	{"n_epochs", "", "jemcheck counts optimiser steps, not epochs: use --steps (an epoch is samples/batch_size steps)"},
	{"dataset", "", "jemcheck's data are its tasks: use --task (table, gmm:K,C, moons:SIGMA, circles:SIGMA, bits:D,K, blocks:B,TASK), or --tasks_from / --tables_from a file"},
	{"data_root", "", "read tasks or tables from a file with --tasks_from or --tables_from"},
	{"optimizer", "", "jemcheck trains with Adam, the reference implementation's default, and has no other optimiser"},
	{"p_y_given_x_weight", "", "the cross-entropy term has weight 1; weigh the log p(x) term with --jem_px_weight (alias --p_x_weight)"},
	{"p_x_y_weight", "", "jemcheck has no log p(x|y) term (the reference implementation's default weight is 0)"},
	{"warmup_iters", "", "jemcheck's learning rate (--lr) is constant, with no warm-up"},
	{"decay_epochs", "", "jemcheck's learning rate (--lr) is constant, with no decay"},
	{"decay_rate", "", "jemcheck's learning rate (--lr) is constant, with no decay"},
	{"weight_decay", "", "jemcheck has no weight decay"},
	{"sigma", "", "jemcheck adds no noise to the inputs: the draws are the task's"},
	{"width", "", "the model is --model: linear or mlp:H1,H2,... (tanh hidden layers)"},
	{"depth", "", "the model is --model: linear or mlp:H1,H2,... (tanh hidden layers)"},
	{"norm", "", "jemcheck's models have no normalisation layers: --model is linear or mlp:H1,H2,..."},
	{"dropout_rate", "", "jemcheck's models have no dropout"},
	{"uncond", "", "jemcheck's energy is always −logsumexp_y f(x) (the reference implementation's default)"},
	{"class_cond_p_x_sample", "", "sgld samples p(x), the reference implementation's default"},
	{"labels_per_class", "", "every draw is labelled: jemcheck has no semi-supervised mode"},
	{"clf_only", "", "train the classifier alone with --methods=baseline"},
	{"n_valid", "", "jemcheck evaluates against the exact truth and needs no validation split"},
	{"save_dir", "", "jemcheck writes a run's outputs to --out (a path or a storage URL)"},
	{"load_path", "", "jemcheck keeps no checkpoints; a run's results are under --out"},
	{"ckpt_every", "", "jemcheck keeps no checkpoints; a run's results are under --out"},
	{"print_every", "", "jemcheck prints its progress on its own (to stderr)"},
	{"print_to_log", "", "jemcheck prints its progress to stderr"},
	{"plot_uncond", "", "the figures are in the report, report.html under --out"},
	{"plot_cond", "", "the figures are in the report, report.html under --out"},
	{"ood_dataset", "", "2-D tasks: choose the OOD draws with --ood (uniform, shifted or other-task)"},
}

// refFlag is the entry of RefFlags with the name, if any.
func refFlag(name string) (RefFlag, bool) {
	i := slices.IndexFunc(RefFlags, func(r RefFlag) bool { return r.Name == name })
	if i < 0 {
		return RefFlag{}, false
	}
	return RefFlags[i], true
}

// Aliases are the entries of RefFlags that are aliases.
func Aliases() []RefFlag {
	var as []RefFlag
	for _, r := range RefFlags {
		if r.Alias() {
			as = append(as, r)
		}
	}
	return as
}

// ReferenceFlagsMarkdown is RefFlags as the Markdown table of docs/flags.md.
func ReferenceFlagsMarkdown() string {
	var b strings.Builder
	b.WriteString("| reference flag | jemcheck | note |\n|---|---|---|\n")
	for _, r := range RefFlags {
		j := "none"
		switch {
		case r.Alias():
			j = fmt.Sprintf("`--%s` (alias)", r.Flag)
		case r.Flag != "":
			j = "the same name"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", r.Name, j, strings.ReplaceAll(r.Note, "|", `\|`))
	}
	return b.String()
}

// aliasValue is an alias flag's value: its target's.
type aliasValue struct{ target flag.Value }

func (a *aliasValue) String() string {
	if a == nil || a.target == nil {
		return ""
	}
	return a.target.String()
}

func (a *aliasValue) Set(s string) error { return a.target.Set(s) }

func (a *aliasValue) IsBoolFlag() bool {
	b, ok := a.target.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// registerAliases defines on fs each alias of RefFlags whose target fs has: the same
// value as the target's, listed by -help as "alias of --TARGET".
func registerAliases(fs *flag.FlagSet) {
	for _, r := range Aliases() {
		t := fs.Lookup(r.Flag)
		if t == nil || fs.Lookup(r.Name) != nil {
			continue
		}
		fs.Var(&aliasValue{t.Value}, r.Name, fmt.Sprintf("alias of --%s (the reference implementation's name)", r.Flag))
		fs.Lookup(r.Name).DefValue = t.DefValue
	}
}

// resolveAliases refuses an alias given beside its target and marks the target of a
// given alias as given.
func resolveAliases(fs *flag.FlagSet, given map[string]bool) error {
	for _, r := range Aliases() {
		if !given[r.Name] || fs.Lookup(r.Name) == nil {
			continue
		}
		if given[r.Flag] {
			return BadInput("%s: alias of --%s, which is given too; give one of them", r.Name, r.Flag)
		}
		given[r.Flag] = true
	}
	return nil
}

// hint is what the error on the unknown flag name adds: the reference implementation's
// hint (RefFlags), where a grid axis goes (a command with a sweep spec, --spec, and no
// axis flags), or "did you mean" the nearest of fs's flags; "" for none.
func hint(fs *flag.FlagSet, name string) string {
	norm := normFlag(name)
	spec := fs.Lookup("spec") != nil
	if r, ok := refFlag(norm); ok {
		switch {
		case r.Flag == "":
			return r.Note
		case spec && fs.Lookup(r.Flag) == nil && isAxisFlag(r.Flag):
			return fmt.Sprintf("alias of %s, a grid axis: set %s (or %s) in the sweep spec's defaults or grid", r.Flag, r.Flag, r.Name)
		}
	}
	if spec && fs.Lookup(norm) == nil && isAxisFlag(norm) {
		return fmt.Sprintf("a grid axis: set %s in the sweep spec's defaults or grid", norm)
	}
	var names, hints []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	for _, r := range RefFlags {
		if r.Flag == "" {
			hints = append(hints, r.Name)
		}
	}
	s := suggest(append(names, hints...), name)
	if len(s) == 1 && slices.Contains(hints, s[0]) { // a misspelt reference flag jemcheck does not take
		r, _ := refFlag(s[0])
		return fmt.Sprintf("the reference implementation's --%s? %s", r.Name, r.Note)
	}
	s = slices.DeleteFunc(s, func(n string) bool { return slices.Contains(hints, n) })
	if len(s) > 0 {
		return "did you mean --" + strings.Join(s, " or --") + "?"
	}
	return ""
}

// isAxisFlag reports whether name is the flag of a grid axis (schemas.AxisDefs).
func isAxisFlag(name string) bool {
	return slices.ContainsFunc(schemas.AxisDefs, func(a schemas.AxisDef) bool { return a.FlagName() == name })
}

// normFlag is a flag name in lower case with '-' as '_'.
func normFlag(name string) string { return strings.ReplaceAll(strings.ToLower(name), "-", "_") }

// suggest returns up to three of names (in their order) nearest to the unknown name:
// the same up to case and '-' for '_'; else those at the least optimal-string-alignment
// distance (at most a third of the name's length, at least 1, at most 3), a name the
// unknown one (3 letters or more) begins or (4 or more) is contained in counting as
// distance 1½.
func suggest(names []string, name string) []string {
	norm := normFlag(name)
	type cand struct {
		name  string
		score int // twice the distance
	}
	var cs []cand
	limit := 2 * min(3, max(1, len([]rune(norm))/3))
	for _, n := range names {
		c := normFlag(n)
		score := 2 * osa(norm, c)
		if len(norm) >= 4 && strings.Contains(c, norm) || len(norm) >= 3 && strings.HasPrefix(c, norm) {
			score = min(score, 3)
		}
		if score <= max(limit, 3) {
			cs = append(cs, cand{n, score})
		}
	}
	if len(cs) == 0 {
		return nil
	}
	best := slices.MinFunc(cs, func(a, b cand) int { return a.score - b.score }).score
	var out []string
	for _, c := range cs {
		if c.score == best && len(out) < 3 {
			out = append(out, c.name)
		}
	}
	return out
}

// osa is the optimal-string-alignment distance of a and b: insertions, deletions,
// substitutions and transpositions of adjacent letters.
func osa(a, b string) int {
	s, t := []rune(a), []rune(b)
	prev2, prev, cur := make([]int, len(t)+1), make([]int, len(t)+1), make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
