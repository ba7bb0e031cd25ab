package main

import (
	"encoding/json"
	"fmt"
	"gopkg.in/yaml.v3"
	"math"
	"slices"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/stages"
)

// A method's own options (methods/<name> registers them as schemas.OptionField axes)
// are keys of a spec's defaults and grid like every axis, read from the inline
// Options maps of Defaults and Grid: a method added later needs no regenerated field.
// Their order among the axes is schemas.AxisDefs's (after the Grid fields, before
// replicate); an unknown key is an error that lists the known ones.

// checkOptionKeys refuses keys of defaults and grid that are no axis, as the strict
// decoder refuses an unknown field: naming the line of data (the spec's text).
func (s *Spec) checkOptionKeys(data []byte) error {
	for _, part := range []struct {
		name, typ string
		m         map[string]any
	}{{"defaults", "Defaults", s.Defaults.Options}, {"grid", "Grid", s.Grid.Options}} {
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if a, ok := schemas.AxisByKey(k); !ok || !a.IsOption() {
				return fmt.Errorf("spec: line %d: field %s not found in type main.%s", keyLine(data, part.name, k), k, part.typ)
			}
		}
	}
	return nil
}

// keyLine is the line of key under the top-level mapping part of a YAML document, or
// else of its first appearance as a key anywhere (behind a merge key or an anchor); 0
// where it is not found.
func keyLine(data []byte, part, key string) int {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	var first func(n *yaml.Node) int
	first = func(n *yaml.Node) int {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					return n.Content[i].Line
				}
			}
		}
		for _, c := range n.Content {
			if l := first(c); l > 0 {
				return l
			}
		}
		return 0
	}
	top := root.Content[0]
	if top.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(top.Content); i += 2 {
			if top.Content[i].Value == part {
				if l := first(top.Content[i+1]); l > 0 {
					return l
				}
			}
		}
	}
	return first(top)
}

// optionAxis is the odometer's axis of a method's option a.
func (s *Spec) optionAxis(a schemas.AxisDef) axis {
	key := a.Key()
	def, hasDef := s.Defaults.Options[key]
	raw, inGrid := s.Grid.Options[key]
	grid, isList := raw.([]any)
	n := len(grid)
	if inGrid && !isList {
		n = 1 // refused by set: a grid axis needs a list
	}
	set := func(p *stages.Point, v any) (string, error) {
		x, err := optionValue(a, v)
		if err != nil {
			return "", err
		}
		a.Field.Set(&p.Grid, x)
		return fmt.Sprint(x), nil
	}
	return axis{name: key, def: hasDef, n: n, set: func(p *stages.Point, i int) (string, error) {
		if i < 0 {
			return set(p, def)
		}
		if !isList {
			return "", fmt.Errorf("want a list of values, got %v", raw)
		}
		return set(p, grid[i])
	}}
}

// optionValue is a YAML value as the option's type: an int (an integral number), a
// number, a string (not a number or a boolean) or a boolean.
func optionValue(a schemas.AxisDef, v any) (any, error) {
	switch a.Field.Default().(type) {
	case int:
		switch x := v.(type) {
		case int:
			return x, nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int(x), nil
			}
		}
		return nil, fmt.Errorf("want an integer, got %v", v)
	case float64:
		switch x := v.(type) {
		case int:
			return float64(x), nil
		case float64:
			return x, nil
		}
		return nil, fmt.Errorf("want a number, got %v", v)
	case bool:
		if x, ok := v.(bool); ok {
			return x, nil
		}
		return nil, fmt.Errorf("want true or false, got %v", v)
	}
	if x, ok := v.(string); ok {
		return x, nil
	}
	return nil, fmt.Errorf("want a string, got %v", v)
}

// MarshalJSON writes the defaults with the methods' options beside the fields (so
// config.json records a spec that yields the same points).
func (d Defaults) MarshalJSON() ([]byte, error) {
	type plain Defaults
	return withOptions(plain(d), d.Options)
}

// MarshalJSON writes the grid with the methods' options beside the fields.
func (g Grid) MarshalJSON() ([]byte, error) {
	type plain Grid
	return withOptions(plain(g), g.Options)
}

func withOptions(v any, opts map[string]any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(opts) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, x := range opts {
		m[k] = x
	}
	return json.Marshal(m) // sorted keys
}
