package methods_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	. "github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
)

// legacyFile is a results file as jemcheck wrote it before the later columns
// (schemas.ResultRow.LaterColumns): ResultRow's columns less those.
func legacyFile(t *testing.T, rows []schemas.ResultRow) []byte {
	t.Helper()
	later := (*schemas.ResultRow).LaterColumns(nil)
	rt := reflect.TypeOf(schemas.ResultRow{})
	var fields []reflect.StructField
	for i := range rt.NumField() {
		if f := rt.Field(i); !slices.Contains(later, f.Tag.Get("parquet")) {
			fields = append(fields, f)
		}
	}
	lt := reflect.StructOf(fields)
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, parquet.SchemaOf(reflect.New(lt).Interface()))
	for _, r := range rows {
		v, src := reflect.New(lt).Elem(), reflect.ValueOf(r)
		for i := range lt.NumField() {
			v.Field(i).Set(src.FieldByName(lt.Field(i).Name))
		}
		if err := w.Write(v.Addr().Interface()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestOptionsOfOlderFiles: a results file written before method_options existed reads
// back (its later columns empty) and OptionsOf rebuilds each row's method options from
// the legacy columns; a new row's method_options is read as written.
func TestOptionsOfOlderFiles(t *testing.T) {
	old := []schemas.ResultRow{{RunID: "a", Method: "ed"}, {RunID: "b", Method: "sgld", SGLDPreset: "langevin", SGLDLR: 0.01}}
	old[0].EDNegatives, old[0].EDT = 16, 0.25
	rows, err := schemas.DecodeParquet[schemas.ResultRow](legacyFile(t, old))
	if err != nil {
		t.Fatal(err)
	}
	if got := OptionsOf(rows[0]); got["ed_m"] != "16" || got["ed_t"] != "0.25" {
		t.Errorf("ed row: %v", got)
	}
	if got := OptionsOf(rows[1]); got["sgld_preset"] != "langevin" || got["sgld_lr"] != "0.01" {
		t.Errorf("sgld row: %v", got)
	}
	g := schemas.DefaultGrid()
	g.Options = nil
	a, _ := schemas.AxisByKey("nce_nu")
	a.Field.Set(&g, 4)
	r := schemas.ResultRow{Method: "nce", MethodOptions: OptionsJSON("nce", &g)}
	if got := OptionsOf(r); got["nce_nu"] != "4" || got["nce_noise"] != "gaussian" {
		t.Errorf("nce row %q: %v", r.MethodOptions, got)
	}
}

// TestCheckOptions: a registered option's range and choices come from its tags.
func TestCheckOptions(t *testing.T) {
	g := schemas.DefaultGrid()
	a, _ := schemas.AxisByKey("nce_nu")
	a.Field.Set(&g, 0)
	if err := CheckOptions([]string{"nce"}, g); err == nil {
		t.Error("nce_nu 0 passed")
	}
	g = schemas.DefaultGrid()
	b, _ := schemas.AxisByKey("nce_noise")
	b.Field.Set(&g, "laplace")
	if err := CheckOptions([]string{"nce"}, g); err == nil {
		t.Error("nce_noise laplace passed")
	}
	if err := CheckOptions([]string{"baseline", "nce"}, schemas.DefaultGrid()); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
