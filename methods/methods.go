// Package methods is the registry of training methods. A method is a package,
// methods/<name>, that registers itself in init (methods/all imports every one, as
// tasks/all does for the kinds): its name, doc line and source, its roles (a sampler
// compared with exact jem, an exact reference, ...), its options (a typed struct whose
// fields become grid axes: flags, sweep keys, documentation and validation derive from
// it) and, per task kind it trains on, the hook that kind's trainer calls (each kind
// documents its hook's type). Nothing outside a method's package switches on its name:
// the kinds, the verdict and the report ask the registry for roles.
//
// The one built-in entry is External, a model trained outside jemcheck.
package methods

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

// External is a model trained outside jemcheck whose logits pipelines/evaluate reads:
// "external", or "external:NAME" for the model NAME of a logits file. It is the
// registry's one built-in entry.
const External = "external"

// The task kinds' names (package tasks registers one kind per name).
const (
	KindTable  = "table"
	KindPlane  = "plane"
	KindBits   = "bits"   // binary tables x ∈ {0,1}^D, exact by enumeration (tasks/bits)
	KindBlocks = "blocks" // continuous block tasks in D = 2B dimensions (tasks/blocks)
	KindImages = "images" // image-like tasks (tasks/images)
)

// kindOrder is the order kinds are listed in messages.
var kindOrder = []string{KindTable, KindPlane, KindBits, KindBlocks, KindImages}

// Method is one registered method.
type Method struct {
	Name string
	// Doc is one line for the flags' documentation and the report: what the method
	// optimises and, for a sampler, where its recipe comes from.
	Doc string
	// Source cites the method's paper (author, year, venue), "" for jemcheck's own.
	Source string
	// Order is the method's place in the report's and the summary's lists.
	Order int
	// Kinds are the task kinds it trains on: those of its Hooks, in kindOrder
	// (Register sets it; External lists every kind).
	Kinds []string
	// Hooks are the method's hooks at the kinds' typed plugs (plug.go: Plane.Hook(fn),
	// Bits.Hook(fn), ...): the kinds it trains on and how.
	Hooks []Hook
	// Sampler: the log q(x) term is estimated, not exact: from samples (a replay buffer,
	// chains, weighted walkers or exact draws), perturbations of the data (ed, dsm) or
	// noise draws (nce, snl); the summary pairs each sampler with exact jem on the same
	// tasks.
	Sampler bool
	// Reference: an exact-likelihood reference the verdict measures others against
	// (jem, jem-converged, and oracle on the true table).
	Reference bool
	// Yardstick: the reference every sampler is compared with (exact jem); one method.
	Yardstick bool
	// NoPx: the method does not train log q(x) (its result rows have px_weight 0); the
	// baseline, one method.
	NoPx bool
	// FullBatch: trains on full batches of the training draws at a learning rate of
	// at least the kind's floor (jem-converged), beside the others as a reference.
	FullBatch bool
	// Fresh: trains on the truth itself (the true table, or fresh draws of a 2-D task
	// every step: the oracle).
	Fresh bool
	// Comparable: a reference that the summary nevertheless pairs with the yardstick
	// like a sampler (jem-converged).
	Comparable bool
	// KeepsBuffer: the method's runs return their replay buffer or final negatives (the
	// samples promise and the sampler's own distribution read it).
	KeepsBuffer bool
	// DefaultFor are the kinds whose default methods include it beside baseline and jem
	// (sgld: the paper's sampler on 2-D and block tasks).
	DefaultFor []string
	// KernelOnly: the method trains on the fused float32 kernels only (no GoMLX graph).
	KernelOnly bool
	// External: jemcheck does not train it; its logits on the task's evaluation
	// support come from the user (pipelines/evaluate). Its names may carry a model
	// name: "external:NAME".
	External bool
	// Options are the grid axes the method reads: the Grid fields of the methods that
	// predate the registry (sgld_lr, ed_m, ...) and, added by Register, the keys of its
	// Defaults. A point without a method reading an axis has it zeroed, so its result
	// columns show only what applied.
	Options []string
	// Defaults is the method's options struct with its defaults (nil: none beyond
	// Options): each field tagged `opt:"key"` with `doc:"..."`, optionally
	// `label:"..."` (the report's axis label) and `range:"[lo,hi]"` (an interval,
	// ( or ) open, inf allowed) or `enum:"a,b"`. Register makes each field a grid axis
	// (schemas.OptionField); Decode reads a point's values back into the struct.
	Defaults any
	// Validate checks the method's options at a point beyond their tags' ranges (nil:
	// nothing more). Its message names the option.
	Validate func(g schemas.Grid) error
}

var registry []Method

// Register adds a method; method packages call it from init. A name registered twice,
// a second yardstick or baseline, or an options struct that does not parse panics.
func Register(m Method) {
	if m.Name == "" || strings.ContainsAny(m.Name, ":, ") {
		panic(fmt.Sprintf("methods: bad method name %q", m.Name))
	}
	if slices.ContainsFunc(registry, func(o Method) bool {
		return o.Name == m.Name || m.Yardstick && o.Yardstick || m.NoPx && o.NoPx
	}) {
		panic(fmt.Sprintf("methods: %s registered twice, or a second yardstick or baseline", m.Name))
	}
	if !m.External {
		m.Kinds = nil
		for _, k := range kindOrder {
			if slices.ContainsFunc(m.Hooks, func(h Hook) bool { return h.kind == k }) {
				m.Kinds = append(m.Kinds, k)
			}
		}
	}
	if m.Defaults != nil {
		defs, err := optionAxes(m.Defaults)
		if err != nil {
			panic(fmt.Sprintf("methods: %s: %v", m.Name, err))
		}
		for _, d := range defs {
			if a, ok := schemas.AxisByKey(d.Key()); ok {
				if !a.IsOption() || a.Type() != d.Type() {
					panic(fmt.Sprintf("methods: %s: option %s clashes with an axis", m.Name, d.Key()))
				}
			} else {
				schemas.RegisterOption(d)
			}
			m.Options = append(m.Options, d.Key())
		}
	}
	registry = append(registry, m)
	slices.SortStableFunc(registry, func(a, b Method) int { return cmp.Compare(a.Order, b.Order) })
	Table = registry
}

// ExternalKind adds kind to the kinds External (a user's model) applies to: a kind
// that evaluates a user's model given as a file (tasks.ModelKind: images, whose models
// are judged as functions, not as logits on a support) calls it from init.
func ExternalKind(kind string) {
	for i := range registry {
		if registry[i].External && !slices.Contains(registry[i].Kinds, kind) {
			registry[i].Kinds = append(registry[i].Kinds, kind)
		}
	}
	Table = registry
}

// Table are the registered methods, in the order the report lists them.
var Table []Method

func init() {
	Register(Method{Name: External, Order: 1000, Doc: "a model trained outside jemcheck (your own JEM code), measured from its logits on the tasks' evaluation support by pipelines/evaluate and compared with exact jem like a sampler",
		Kinds: slices.Clone(kindOrder), Sampler: true, External: true})
}

// Yardstick is the name of the reference every sampler is compared with (exact jem).
func Yardstick() string { return roleName(func(m Method) bool { return m.Yardstick }) }

// Baseline is the name of the method that does not train log q(x).
func Baseline() string { return roleName(func(m Method) bool { return m.NoPx }) }

func roleName(has func(Method) bool) string {
	if i := slices.IndexFunc(registry, has); i >= 0 {
		return registry[i].Name
	}
	return ""
}

// DefaultFor are the methods a kind's points train by default beyond baseline and
// the yardstick (Method.DefaultFor).
func DefaultFor(kind string) []string {
	var out []string
	for _, m := range registry {
		if slices.Contains(m.DefaultFor, kind) {
			out = append(out, m.Name)
		}
	}
	return out
}

// Has reports whether the named method has the role.
func Has(name string, role func(Method) bool) bool { m, ok := Lookup(name); return ok && role(m) }

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

// With are the names of the methods with the role, in the registry's order.
func With(role func(Method) bool) []string {
	var out []string
	for _, m := range registry {
		if role(m) {
			out = append(out, m.Name)
		}
	}
	return out
}
