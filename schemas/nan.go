package schemas

import (
	"math"
	"reflect"
	"strconv"
)

// NaNFields names the float64 fields of v (a struct, walked through its exported
// fields, slices and pointers) that are NaN or infinite, by path ("Methods[2].KLJoint.Mean"):
// what a JSON write that fails on a non-finite number should name.
func NaNFields(v any) []string {
	var out []string
	nanFields(reflect.ValueOf(v), "", &out)
	return out
}

func nanFields(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			*out = append(*out, path)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				p := t.Field(i).Name
				if path != "" {
					p = path + "." + p
				}
				nanFields(v.Field(i), p, out)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			nanFields(v.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			nanFields(v.Elem(), path, out)
		}
	}
}
