// Package methods is the one table of training methods: each method is one entry,
// naming the task kinds it trains on, the grid options it reads, whether its log q(x)
// gradient comes from samples (a sampler, compared with exact jem in the summary) or
// is exact (a reference), and whether it needs the fused float32 kernels. Validation,
// the flags' documentation, the summary's sampler comparisons and the backend checks
// all read this table; the kinds (package tasks and its subpackages) say how each
// method trains on their tasks.
//
// Adding a method is an entry here, its trainer in the kind that runs it, and, for a
// recipe with options, their checks (tasks/resolve.go) and the kernel's method enum
// (models/kernel's Method2D or MethodBits).
package methods

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// The methods' names.
const (
	Baseline = "baseline"
	JEM      = "jem"
	// JEMConverged is exact JEM trained on full batches at a rate of at least 0.01: "the
	// best this model family does on these draws", reported beside the others under its
	// own name and never the yardstick (that is jem, trained like every sampler).
	JEMConverged = "jem-converged"
	Oracle       = "oracle"
	SGLD         = "sgld"
	PCD          = "pcd"
	PCDExact     = "pcd-exact"
	MALA         = "mala"
	Jarzynski    = "jarzynski"
	ED           = "ed"
	ShortRun     = "shortrun"
	// External is a model trained outside jemcheck whose logits pipelines/evaluate
	// reads: "external", or "external:NAME" for the model NAME of a logits file.
	External = "external"
)

// The task kinds' names (package tasks registers one kind per name).
const (
	KindTable  = "table"
	KindPlane  = "plane"
	KindBits   = "bits"   // binary tables x ∈ {0,1}^D, exact by enumeration (tasks/bits)
	KindBlocks = "blocks" // continuous block tasks in D = 2B dimensions (tasks/blocks)
)

// Method is one entry of the table.
type Method struct {
	Name string
	// Doc is one line for the flags' documentation and the report: what the method
	// optimises and, for a sampler, where its recipe comes from.
	Doc string
	// Kinds are the task kinds it trains on.
	Kinds []string
	// Sampler: the log q(x) term is estimated, not exact: from samples (a replay buffer,
	// chains, weighted walkers or exact draws) or, for ed, perturbations of the data;
	// the summary pairs each sampler with exact jem on the same tasks.
	Sampler bool
	// Reference: an exact-likelihood reference the verdict measures others against
	// (jem, and oracle on the true table).
	Reference bool
	// NoPx: the method does not train log q(x) (its result rows have px_weight 0).
	NoPx bool
	// KernelOnly: the method trains on the fused float32 kernels only (no GoMLX graph).
	KernelOnly bool
	// External: jemcheck does not train it; its logits on the task's evaluation
	// support come from the user (pipelines/evaluate). Its names may carry a model
	// name: "external:NAME".
	External bool
	// Options are the grid axes only this method (and others listing them) reads; a
	// point without a method reading an axis has it zeroed, so its result columns show
	// only what applied.
	Options []string
}

// Table is the method table, in the order the report lists methods.
var Table = []Method{
	{Name: Baseline, Doc: "cross-entropy only: fits q(y|x) and leaves q(x) to chance",
		Kinds: []string{KindTable, KindPlane, KindBits, KindBlocks}, NoPx: true},
	{Name: JEM, Doc: "exact JEM: cross-entropy plus the exact log q(x), Z by enumeration (tables, binary tables) or on a shifted training grid (2-D, and each block of a block task)",
		Kinds: []string{KindTable, KindPlane, KindBits, KindBlocks}, Reference: true, Options: []string{"train_grid"}},
	{Name: JEMConverged, Doc: "exact JEM on full batches at lr >= 0.01 (2-D, block tasks), selected by the same truth-free rule: the best this model family does on these draws; a reference shown beside the others, never the yardstick",
		Kinds: []string{KindPlane, KindBlocks}, Reference: true, Options: []string{"train_grid"}},
	{Name: Oracle, Doc: "exact JEM trained on the true table (tables) or fresh draws from the truth every step (2-D): the family's best",
		Kinds: []string{KindTable, KindPlane}, Reference: true, Options: []string{"train_grid"}},
	{Name: SGLD, Doc: "the paper's JEM: log q(x) gradient from a replay buffer refined by SGLD (Grathwohl et al. 2020, official settings)",
		Kinds: []string{KindPlane, KindBlocks}, Sampler: true, KernelOnly: true,
		Options: []string{"sgld_preset", "sgld_lr", "sgld_std", "sgld_steps", "sgld_clamp", "buffer_size", "reinit_freq"}},
	{Name: PCD, Doc: "JEM with persistent Metropolis–Hastings chains in a replay buffer (PCD, Tieleman 2008) for the log q(x) gradient",
		Kinds: []string{KindTable, KindBits}, Sampler: true, KernelOnly: true,
		Options: []string{"chain_steps", "proposal", "buffer_size", "reinit_freq"}},
	{Name: PCDExact, Doc: "JEM with exact draws from q(x) for the log q(x) gradient: the sampler's gradient noise without its bias",
		Kinds: []string{KindTable}, Sampler: true, KernelOnly: true},
	{Name: MALA, Doc: "JEM with sgld's replay buffer refined by Metropolis-adjusted Langevin at temperature 1, its step adapted toward 0.574 acceptance (Roberts & Tweedie 1996)",
		Kinds: []string{KindPlane}, Sampler: true, KernelOnly: true,
		Options: []string{"step_size", "sgld_steps", "buffer_size", "reinit_freq"}},
	{Name: Jarzynski, Doc: "JEM with persistent walkers whose Jarzynski importance weights correct the log Z gradient's non-equilibrium bias, resampled at ESS < ½ (Carbone et al., NeurIPS 2023)",
		Kinds: []string{KindPlane}, Sampler: true, KernelOnly: true,
		Options: []string{"step_size", "sgld_steps", "ess_resample"}},
	{Name: ED, Doc: "Energy Discrepancy: sampler-free, compares the energy at a draw with M Gaussian-perturbed negatives (Schröder et al., NeurIPS 2023)",
		Kinds: []string{KindPlane, KindBits}, Sampler: true, KernelOnly: true,
		Options: []string{"ed_m", "ed_t", "ed_w"}},
	{Name: ShortRun, Doc: "JEM with short-run Langevin chains from uniform noise each step and an L2 penalty on energies (Nijkamp et al. 2019; Du & Mordatch 2019; JEM++)",
		Kinds: []string{KindPlane}, Sampler: true, KernelOnly: true,
		Options: []string{"shortrun_step", "sgld_steps", "shortrun_noise", "energy_l2"}},
	{Name: External, Doc: "a model trained outside jemcheck (your own JEM code), measured from its logits on the tasks' evaluation support by pipelines/evaluate and compared with exact jem like a sampler",
		Kinds: []string{KindTable, KindPlane, KindBits, KindBlocks}, Sampler: true, External: true},
}

// Lookup returns the entry of the named method ("external:NAME" is External's).
func Lookup(name string) (Method, bool) {
	i := Order(name)
	if i < 0 {
		return Method{}, false
	}
	return Table[i], true
}

// Order is the named method's position in the table (the order the report and the
// summary list methods in), -1 for an unknown name.
func Order(name string) int {
	if base, model, ok := strings.Cut(name, ":"); ok {
		if base != External || !ValidModelName(model) {
			return -1
		}
		name = base
	}
	return slices.IndexFunc(Table, func(m Method) bool { return m.Name == name })
}

// IsExternal reports whether the named method is a user's model (External).
func IsExternal(name string) bool { m, ok := Lookup(name); return ok && m.External }

// ExternalMethod is the method name of a user's model called model ("" or "external":
// the method External itself).
func ExternalMethod(model string) string {
	if model == "" || model == External {
		return External
	}
	return External + ":" + model
}

// ValidModelName reports whether a user's model name can name a method: 1 to 40
// letters, digits, '.', '_' and '-' (it becomes part of run ids and file names).
func ValidModelName(s string) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Compare orders method names as the table lists them (a user's models by name).
func Compare(a, b string) int {
	if c := cmp.Compare(Order(a), Order(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// Names are every method's name, in the table's order.
func Names() []string {
	out := make([]string, len(Table))
	for i, m := range Table {
		out[i] = m.Name
	}
	return out
}

// Trained are the names of the methods jemcheck trains (all but External).
func Trained() []string {
	var out []string
	for _, m := range Table {
		if !m.External {
			out = append(out, m.Name)
		}
	}
	return out
}

// For are the names of the methods that train on the kind, in the table's order.
func For(kind string) []string {
	var out []string
	for _, m := range Table {
		if slices.Contains(m.Kinds, kind) && !m.External {
			out = append(out, m.Name)
		}
	}
	return out
}

// Samplers are the sampler methods' names.
func Samplers() []string {
	var out []string
	for _, m := range Table {
		if m.Sampler {
			out = append(out, m.Name)
		}
	}
	return out
}

// IsSampler reports whether the named method is a sampler.
func IsSampler(name string) bool { m, ok := Lookup(name); return ok && m.Sampler }

// Uses reports whether any of the named methods reads the grid axis.
func Uses(names []string, axis string) bool {
	for _, n := range names {
		if m, ok := Lookup(n); ok && slices.Contains(m.Options, axis) {
			return true
		}
	}
	return false
}

// Parse parses a comma-separated method list.
func Parse(s string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if mm, ok := Lookup(m); !ok || mm.External {
			if ok {
				return nil, fmt.Errorf("method %s is a model trained outside jemcheck: give its logits to pipelines/evaluate (--logits)", Quote(m))
			}
			return nil, fmt.Errorf("unknown method %s (known: %s)", Quote(m), strings.Join(Trained(), ", "))
		}
		if slices.Contains(out, m) {
			return nil, fmt.Errorf("method %s listed twice", Quote(m))
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no methods given")
	}
	return out, nil
}

// Check checks that the named method is known and trains on the kind; others names
// the kind's tasks for the message (e.g. "the 2-D task gmm:3,2").
func Check(name, kind, what string) error {
	m, ok := Lookup(name)
	if !ok {
		return fmt.Errorf("unknown method %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if slices.Contains(m.Kinds, kind) {
		return nil
	}
	var on []string
	for _, k := range m.Kinds {
		on = append(on, KindWords(k))
	}
	return fmt.Errorf("method %s trains on %s, not on %s (methods for it: %s)", name, strings.Join(on, " and "), what,
		strings.Join(For(kind), ", "))
}

// KindWords names a kind's tasks in messages, with how to choose them.
func KindWords(kind string) string { return KindNoun(kind) + KindHint(kind) }

// KindHint says how to choose a kind's tasks, " (--task=...)", or "".
func KindHint(kind string) string { return kindHint[kind] }

// KindNoun names a kind's tasks in messages ("tables", "2-D tasks").
func KindNoun(kind string) string {
	if w, ok := kindNoun[kind]; ok {
		return w
	}
	return kind + " tasks"
}

// Using are the names of the methods that read the grid axis.
func Using(axis string) []string {
	var out []string
	for _, m := range Table {
		if slices.Contains(m.Options, axis) {
			out = append(out, m.Name)
		}
	}
	return out
}

// kindNoun and kindHint name each kind's tasks in messages and say how to choose them.
var (
	kindNoun = map[string]string{KindTable: "tables", KindPlane: "2-D tasks", KindBits: "binary tables", KindBlocks: "block tasks"}
	kindHint = map[string]string{KindPlane: " (--task=gmm:K,C, moons:SIGMA or circles:SIGMA, or --tasks_from)",
		KindBits: " (--task=bits:D,K)", KindBlocks: " (--task=blocks:B,<2-D task>)"}
)

// Quote quotes a user's value for a message, cut to 80 characters.
func Quote(s string) string {
	if r := []rune(s); len(r) > 80 {
		return fmt.Sprintf("%q... (%d characters)", string(r[:80]), len(r))
	}
	return fmt.Sprintf("%q", s)
}

// Sorted are the known method names among names, once each, in Compare's order.
func Sorted(names iter.Seq[string]) []string {
	var out []string
	for n := range names {
		if Order(n) >= 0 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, Compare)
	return out
}
