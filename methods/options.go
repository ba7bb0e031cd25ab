package methods

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/schemas"
)

// optionAxes are the grid axes of a method's options struct (Method.Defaults): one
// schemas.OptionField a field tagged opt, its default the struct's value.
func optionAxes(defaults any) ([]schemas.AxisDef, error) {
	v := reflect.ValueOf(defaults)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("options: want a struct, got %T", defaults)
	}
	var out []schemas.AxisDef
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key := f.Tag.Get("opt")
		if key == "" {
			continue
		}
		doc := f.Tag.Get("doc")
		if doc == "" {
			return nil, fmt.Errorf("option %s: no doc tag", key)
		}
		if _, err := parseRange(f.Tag.Get("range")); err != nil {
			return nil, fmt.Errorf("option %s: %w", key, err)
		}
		var field schemas.Field
		switch x := v.Field(i).Interface().(type) {
		case int:
			field = schemas.OptionField(key, x)
		case float64:
			field = schemas.OptionField(key, x)
		case string:
			field = schemas.OptionField(key, x)
		case bool:
			field = schemas.OptionField(key, x)
		default:
			return nil, fmt.Errorf("option %s: type %s (want int, float64, string or bool)", key, f.Type)
		}
		out = append(out, schemas.AxisDef{Field: field, Doc: doc, Label: f.Tag.Get("label")})
	}
	return out, nil
}

// Decode sets the fields of the options struct dst (a pointer to the method's
// Defaults type) from the point's values of their axes (the default where unset).
func Decode(g schemas.Grid, dst any) {
	v := reflect.ValueOf(dst).Elem()
	for i := range v.NumField() {
		key := v.Type().Field(i).Tag.Get("opt")
		if key == "" {
			continue
		}
		if a, ok := schemas.AxisByKey(key); ok {
			v.Field(i).Set(reflect.ValueOf(a.Field.Get(&g)))
		}
	}
}

// interval is an option's range: lo..hi, each end open or closed.
type interval struct {
	lo, hi         float64
	loOpen, hiOpen bool
	set            bool
}

// parseRange parses "[lo,hi]" with ( or ) for an open end and inf for no bound.
func parseRange(s string) (interval, error) {
	if s == "" {
		return interval{}, nil
	}
	if len(s) < 5 || !strings.ContainsRune("[(", rune(s[0])) || !strings.ContainsRune("])", rune(s[len(s)-1])) {
		return interval{}, fmt.Errorf("range %q: want [lo,hi] with ( or ) for an open end", s)
	}
	lo, hi, ok := strings.Cut(s[1:len(s)-1], ",")
	if !ok {
		return interval{}, fmt.Errorf("range %q: want [lo,hi]", s)
	}
	a, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	b, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if err1 != nil || err2 != nil || a > b {
		return interval{}, fmt.Errorf("range %q: bad bounds", s)
	}
	return interval{lo: a, hi: b, loOpen: s[0] == '(', hiOpen: s[len(s)-1] == ')', set: true}, nil
}

func (r interval) contains(x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	return (x > r.lo || !r.loOpen && x == r.lo) && (x < r.hi || !r.hiOpen && x == r.hi)
}

func (r interval) String() string {
	fmtB := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	l, h := "[", "]"
	if r.loOpen {
		l = "("
	}
	if r.hiOpen {
		h = ")"
	}
	return l + fmtB(r.lo) + ", " + fmtB(r.hi) + h
}

// CheckOptions checks the options of the named methods at a point: each option's
// range or choices (its tags), then the method's own Validate.
func CheckOptions(names []string, g schemas.Grid) error {
	for _, n := range names {
		m, ok := Lookup(n)
		if !ok {
			continue
		}
		if m.Defaults != nil {
			v := reflect.ValueOf(m.Defaults)
			if v.Kind() == reflect.Pointer {
				v = v.Elem()
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				key := f.Tag.Get("opt")
				a, ok := schemas.AxisByKey(key)
				if key == "" || !ok {
					continue
				}
				switch x := a.Field.Get(&g).(type) {
				case int, float64:
					r, _ := parseRange(f.Tag.Get("range"))
					fx := toFloat(x)
					if r.set && !r.contains(fx) {
						return fmt.Errorf("%s must be in %s, got %v", key, r, x)
					}
					if !r.set && (math.IsNaN(fx) || math.IsInf(fx, 0)) {
						return fmt.Errorf("%s must be a finite number, got %v", key, x)
					}
				case string:
					if e := f.Tag.Get("enum"); e != "" && !slices.Contains(strings.Split(e, ","), x) {
						return fmt.Errorf("%s: unknown value %s (known: %s)", key, Quote(x), strings.ReplaceAll(e, ",", ", "))
					}
				}
			}
		}
		if m.Validate != nil {
			if err := m.Validate(g); err != nil {
				return err
			}
		}
	}
	return nil
}

func toFloat(x any) float64 {
	switch v := x.(type) {
	case int:
		return float64(v)
	case float64:
		return v
	}
	return math.NaN()
}

// OptionsJSON is the method_options column of a run of the named method at g: the
// values of the axes the method reads, as one JSON object ("" for none).
func OptionsJSON(name string, g *schemas.Grid) string {
	m, ok := Lookup(name)
	if !ok || len(m.Options) == 0 {
		return ""
	}
	return schemas.ValuesJSON(g, m.Options)
}

// OptionsOf are a result row's method options, by key: its method_options column or,
// for a row of a file written before that column (empty), the legacy columns of the
// axes its method reads (sgld_lr, ed_m, ...).
func OptionsOf(r schemas.ResultRow) schemas.Options {
	if o := r.Options(); o != nil {
		return o
	}
	m, ok := Lookup(r.Method)
	if !ok {
		return nil
	}
	g := schemas.GridOf(r)
	o := schemas.Options{}
	for _, k := range m.Options {
		if a, ok := schemas.AxisByKey(k); ok && !a.IsOption() {
			o[k] = fmt.Sprint(a.Field.Get(&g))
			if f, isF := a.Field.Get(&g).(float64); isF {
				o[k] = strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
	}
	return o
}

// CheckFloat32 refuses a value the fused float32 kernels cannot hold.
func CheckFloat32(name string, v float64) error {
	if a := math.Abs(v); a > math.MaxFloat32 || (a > 0 && float32(a) == 0) {
		return fmt.Errorf("%s: %v is outside the range of float32 (%.3g to %.3g), in which the kernels compute",
			name, v, math.SmallestNonzeroFloat32, math.MaxFloat32)
	}
	return nil
}

// PxWeight is the weight of a recipe's log q(x) term on a kind that adds it to
// cross-entropy (images: the CNN's ed, dsm, nce), which must be a finite number > 0
// (at 0 the recipe would be the baseline).
func PxWeight(g schemas.Grid, method string) (float64, error) {
	if !(g.PxWeight > 0) || math.IsInf(g.PxWeight, 0) {
		return 0, fmt.Errorf("px_weight must be a finite number > 0 for %s on images (it weights the %s term against cross-entropy), got %v", method, method, g.PxWeight)
	}
	return g.PxWeight, nil
}
