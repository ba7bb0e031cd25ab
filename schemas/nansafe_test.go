package schemas

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// fillNaN sets every float64 reachable from v (struct fields, one element of each
// slice, map values) to NaN, and reports the paths it set.
func fillNaN(v reflect.Value, path string, paths *[]string) {
	switch v.Kind() {
	case reflect.Float64:
		if v.CanSet() {
			v.SetFloat(math.NaN())
			*paths = append(*paths, path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillNaN(v.Field(i), path+"."+v.Type().Field(i).Name, paths)
			}
		}
	case reflect.Slice:
		if v.CanSet() && v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			fillNaN(v.Index(i), path+"[]", paths)
		}
	case reflect.Pointer:
		if v.CanSet() && v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		if !v.IsNil() {
			fillNaN(v.Elem(), path, paths)
		}
	}
}

// TestSummaryNaNSafe: a point summary whose every number is NaN (a measure no run
// has; its grid's parameters aside, which validation keeps finite) still writes as
// JSON, each NaN as null, and reads back as NaN: summary.json never fails on a
// missing measure (it did on a joint block point whose exact jem had no finite KL).
func TestSummaryNaNSafe(t *testing.T) {
	var ps PointSummary
	var paths []string
	fillNaN(reflect.ValueOf(&ps).Elem(), "PointSummary", &paths)
	ps.Params = Grid{}
	data, err := json.Marshal(ps)
	if err == nil {
		var back PointSummary
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(back.Methods[0].KLJoint.Mean) || !math.IsNaN(back.Comparison.MeanDiff) || !math.IsNaN(back.EmptyCellShare) {
			t.Errorf("read back %v, %v, %v: want NaN", back.Methods[0].KLJoint.Mean, back.Comparison.MeanDiff, back.EmptyCellShare)
		}
		if names := NaNFields(ps); len(names) < 100 {
			t.Errorf("NaNFields named %d fields, want every one set", len(names))
		}
		return
	}
	// find the fields that fail, one at a time
	for _, p := range paths {
		var one PointSummary
		var all []string
		fillNaN(reflect.ValueOf(&one).Elem(), "PointSummary", &all)
		clearAllBut(reflect.ValueOf(&one).Elem(), "PointSummary", p)
		one.Params = Grid{}
		if _, err := json.Marshal(one); err != nil {
			t.Errorf("%s NaN: %v", p, err)
		}
	}
}

// clearAllBut sets every float64 but the one at keep to 0.
func clearAllBut(v reflect.Value, path, keep string) {
	switch v.Kind() {
	case reflect.Float64:
		if v.CanSet() && path != keep {
			v.SetFloat(0)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				clearAllBut(v.Field(i), path+"."+v.Type().Field(i).Name, keep)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			clearAllBut(v.Index(i), path+"[]", keep)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			clearAllBut(v.Elem(), path, keep)
		}
	}
}
