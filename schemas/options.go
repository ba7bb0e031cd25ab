package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Options are a grid point's method options that live outside Grid's fields: the
// values of the option axes the method packages register (RegisterOption), by key,
// each in its canonical text (strconv's) so that Beam's schema coder carries them;
// OptionField reads one back in its type, and the JSON form has typed values. A point
// carries the options of the methods it trains (tasks.Resolve drops the others).
type Options map[string]string

// OptionField is the field of a method option: its value lives in Grid.Options under
// key, def when unset. The method packages (methods/<name>) declare their options as
// typed structs and register one such axis per field (methods.Register).
func OptionField[T int | float64 | string | bool](key string, def T) Field {
	return optionField[T]{key: key, def: def}
}

type optionField[T int | float64 | string | bool] struct {
	key string
	def T
}

func (f optionField[T]) Default() any { return f.def }

// Ptr is nil: an option has no field of Grid (flags set it with Set).
func (f optionField[T]) Ptr(*Grid) any { return nil }
func (f optionField[T]) Get(g *Grid) any {
	if s, ok := g.Options[f.key]; ok {
		if v, err := parseAs(any(f.def), s); err == nil {
			return v
		}
	}
	return f.def
}

// Set writes a new map (copy on write): grids copied by value, as points are, never
// share an option's change.
func (f optionField[T]) Set(g *Grid, v any) {
	m := maps.Clone(g.Options)
	if m == nil {
		m = Options{}
	}
	m[f.key] = formatValue(v.(T))
	g.Options = m
}

// parseAs parses s as a value of def's type.
func parseAs(def any, s string) (any, error) {
	switch def.(type) {
	case int:
		return strconv.Atoi(s)
	case float64:
		return strconv.ParseFloat(s, 64)
	case bool:
		return strconv.ParseBool(s)
	}
	return s, nil
}

// formatValue is a value's canonical text.
func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// typed are the options with each value in its axis's type (unregistered keys as
// text).
func (o Options) typed(keys []string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		s, ok := o[k]
		if !ok {
			continue
		}
		out[k] = s
		if a, ok := AxisByKey(k); ok {
			if v, err := parseAs(a.Field.Default(), s); err == nil {
				out[k] = v
			}
		}
	}
	return out
}

// MarshalJSON writes the options with typed values.
func (o Options) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	return json.Marshal(o.typed(keys))
}
func (f optionField[T]) optionKey() string { return f.key }

// Unset removes the option from g (a point whose methods do not read it).
func (f optionField[T]) Unset(g *Grid) {
	if _, ok := g.Options[f.key]; !ok {
		return
	}
	m := maps.Clone(g.Options)
	delete(m, f.key)
	if len(m) == 0 {
		m = nil
	}
	g.Options = m
}

// IsOption reports whether the axis is a registered method option (its value in
// Grid.Options) rather than a field of Grid.
func (a AxisDef) IsOption() bool {
	_, ok := a.Field.(interface{ optionKey() string })
	return ok
}

// GoName is the axis's Go field name: its Grid field's, or for an option its key in
// camel case (ed_m: EdM), as the sweep spec's generated types name it.
func (a AxisDef) GoName() string {
	if !a.IsOption() {
		return a.StructField().Name
	}
	var b strings.Builder
	b.WriteString("Opt")
	for _, part := range strings.Split(a.Key(), "_") {
		if part != "" {
			r := []rune(part)
			b.WriteString(string(unicode.ToUpper(r[0])) + string(r[1:]))
		}
	}
	return b.String()
}

// RegisterOption adds method options to the axes, before replicate (which stays last
// so that repeats vary fastest). Method packages call it from init (through
// methods.Register); a key registered twice panics.
func RegisterOption(defs ...AxisDef) {
	for _, a := range defs {
		if !a.IsOption() {
			panic("schemas: RegisterOption takes OptionField axes")
		}
		if _, ok := AxisByKey(a.Key()); ok {
			panic(fmt.Sprintf("schemas: option %q registered twice", a.Key()))
		}
		i := slices.IndexFunc(AxisDefs, func(d AxisDef) bool { return !d.IsOption() && d.Key() == "replicate" })
		a.key = a.deriveKey()
		AxisDefs = slices.Insert(AxisDefs, i, a)
		indexAxes()
	}
}

// UnmarshalJSON reads options back with each value in its axis's type (JSON numbers
// of int options as ints); an unregistered key is an error.
func (o *Options) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*o = nil
		return nil
	}
	out := Options{}
	for k, v := range raw {
		a, ok := AxisByKey(k)
		if !ok || !a.IsOption() {
			return fmt.Errorf("unknown method option %q", k)
		}
		var err error
		switch a.Field.Default().(type) {
		case int:
			var x int
			err = json.Unmarshal(v, &x)
			out[k] = formatValue(x)
		case float64:
			var x float64
			err = json.Unmarshal(v, &x)
			out[k] = formatValue(x)
		case string:
			var x string
			err = json.Unmarshal(v, &x)
			out[k] = x
		case bool:
			var x bool
			err = json.Unmarshal(v, &x)
			out[k] = formatValue(x)
		}
		if err != nil {
			return fmt.Errorf("method option %q: %w", k, err)
		}
	}
	*o = out
	return nil
}

// JSON is the options of keys (those set) as one JSON object with sorted keys: the
// method_options column of a result row.
func (o Options) JSON(keys []string) string {
	sub := o.typed(keys)
	if len(sub) == 0 {
		return ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(sub) // maps encode with sorted keys
	return strings.TrimSpace(buf.String())
}

// ValuesJSON is the values of the axes keys at g as one JSON object with sorted keys
// and typed values (the method_options column; "" when no key is an axis): each value
// in its canonical text (strconv's 'g' for floats) read back in its axis's type, as
// Options.JSON writes them. It is the same for every run of a point, so it is encoded
// once per distinct set of values and interned: a run's call appends the values' text
// to a stack buffer and looks it up, allocating nothing on a hit.
func ValuesJSON(g *Grid, keys []string) string {
	var buf [512]byte
	fp := buf[:0]
	for _, k := range keys {
		if i, ok := axisIndex[k]; ok && AxisDefs[i].key == k {
			fp = append(fp, k...)
			fp = appendValue(append(fp, 0), AxisDefs[i].Field, g)
			fp = append(fp, 0)
		}
	}
	if len(fp) == 0 {
		return ""
	}
	valuesMemo.RLock()
	s, ok := valuesMemo.m[string(fp)] // no allocation: the compiler's map-key conversion
	valuesMemo.RUnlock()
	if ok {
		return s
	}
	gc := *g // a copy for the interface calls below, which g would escape through (once per set of values)
	o := Options{}
	for _, k := range keys {
		if a, ok := AxisByKey(k); ok {
			o[k] = formatValue(a.Field.Get(&gc))
		}
	}
	s = o.JSON(keys)
	valuesMemo.Lock()
	if valuesMemo.m == nil || len(valuesMemo.m) >= valuesMemoMax {
		valuesMemo.m = make(map[string]string) // a bound, not an eviction policy: a sweep has far fewer points
	}
	valuesMemo.m[string(fp)] = s
	valuesMemo.Unlock()
	return s
}

// valuesMemo interns ValuesJSON's results by the text of the values they encode.
var valuesMemo struct {
	sync.RWMutex
	m map[string]string
}

// valuesMemoMax bounds valuesMemo (entries of a few hundred bytes each).
const valuesMemoMax = 1 << 14
