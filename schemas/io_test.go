package schemas

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/jemcheck/jemcheck/storage"
)

func memBucket(t *testing.T) *blob.Bucket {
	t.Helper()
	b, err := storage.OpenBucket(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// roundTrip writes rows, reads them back and compares; it returns the file's bytes.
func roundTrip[T any](t *testing.T, b *blob.Bucket, key string, rows []T) []byte {
	t.Helper()
	ctx := context.Background()
	if err := WriteParquet(ctx, b, key, rows); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := ReadParquet[T](ctx, b, key)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(rows) == 0 && len(got) == 0 {
		return nil
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("got %+v, want %+v", got, rows)
	}
	data, err := b.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func sampleResults() []ResultRow {
	return []ResultRow{
		{RunID: "p0-t1-jem", TableID: 1, Method: "jem", PointID: 0, XValues: 10, Classes: 3, Encoding: "onehot",
			Generator: "dirichlet:0.5", Model: "mlp:64,64", Samples: 1000, Steps: 2000, LR: 1e-3, BatchSize: 0,
			PxWeight: 1, Replicate: 2, KLJoint: 0.0123, KLMarginal: 0.004, KLConditional: 0.008, Accuracy: 0.71,
			BayesAccuracy: 0.74, Floor: 0.0145, KLEmpirical: 0.015, FinalLoss: -2.5, Diverged: false, TrainMS: 812.5},
		{RunID: "p0-t2-baseline", TableID: 2, Method: "baseline", Encoding: "scalar", Generator: "uniform",
			Model: "linear", KLJoint: math.Inf(1), Diverged: true, FinalLoss: math.MaxFloat64, Accuracy: 0},
		{RunID: "ünïcødé ✓", Method: ""},
	}
}

func TestRoundTrip(t *testing.T) {
	b := memBucket(t)
	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"TableRow", func(t *testing.T) {
			roundTrip(t, b, "tables.parquet", []TableRow{{TableID: 1, X: 0, Y: 0, P: 0.1}, {TableID: 1, X: 0, Y: 1, P: 0.9}, {TableID: -7, X: 3, Y: 2, P: 0}, {TableID: math.MaxInt64, X: math.MaxInt64, Y: 0, P: 5e-324}})
		}},
		{"SampleRow", func(t *testing.T) {
			rows := make([]SampleRow, 50000) // several pages
			for i := range rows {
				rows[i] = SampleRow{TableID: int64(i / 1000), X: int64(i % 17), Y: int64(i % 3)}
			}
			roundTrip(t, b, "samples/part-0.parquet", rows)
		}},
		{"ResultRow", func(t *testing.T) { roundTrip(t, b, "results.parquet", sampleResults()) }},
		{"LearnedRow", func(t *testing.T) {
			roundTrip(t, b, "learned.parquet", []LearnedRow{
				{RunID: "r", TableID: 4, Method: "oracle", PointID: 3, X: 1, Y: 2, Logit: -1000.5, Q: 1e-300},
				{RunID: "r", TableID: 4, Method: "oracle", PointID: 3, X: 1, Y: 3, Logit: 0, Q: 0.5},
			})
		}},
		{"empty", func(t *testing.T) { roundTrip(t, b, "empty.parquet", []TableRow{}) }},
	}
	for _, c := range cases {
		t.Run(c.name, c.run)
	}
}

func TestParquetDeterministic(t *testing.T) {
	b := memBucket(t)
	ctx := context.Background()
	rows := sampleResults()
	for _, key := range []string{"a.parquet", "b/a.parquet"} {
		if err := WriteParquet(ctx, b, key, rows); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := b.ReadAll(ctx, "a.parquet")
	second, _ := b.ReadAll(ctx, "b/a.parquet")
	enc, err := EncodeParquet(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || !bytes.Equal(first, second) || !bytes.Equal(first, enc) {
		t.Fatalf("got %d, %d and %d bytes differing, want identical files", len(first), len(second), len(enc))
	}
}

// TestParquetSchemaStandard checks that written files use only the standard physical and
// logical types that DuckDB, Arrow and Spark read (a DuckDB check was done by hand:
// SELECT * and DESCRIBE on each file type give BIGINT, DOUBLE, VARCHAR, BOOLEAN).
func TestParquetSchemaStandard(t *testing.T) {
	data, err := EncodeParquet(sampleResults())
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[reflect.Kind]parquet.Kind{
		reflect.Int64: parquet.Int64, reflect.Int: parquet.Int64, reflect.Float64: parquet.Double,
		reflect.String: parquet.ByteArray, reflect.Bool: parquet.Boolean,
	}
	var cols []reflect.StructField // the row's fields, an embedded struct's (Recipe) in its place
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[ResultRow]()) {
		if !sf.Anonymous {
			cols = append(cols, sf)
		}
	}
	fields := f.Schema().Fields()
	if len(fields) != len(cols) {
		t.Fatalf("got %d columns, want %d", len(fields), len(cols))
	}
	for i, field := range fields {
		sf := cols[i]
		t.Run(field.Name(), func(t *testing.T) {
			if name, _, _ := strings.Cut(sf.Tag.Get("parquet"), ","); field.Name() != name {
				t.Fatalf("got column %q, want %q", field.Name(), name)
			}
			if field.Optional() || field.Repeated() {
				t.Errorf("got optional/repeated column, want required")
			}
			typ := field.Type()
			if got := typ.Kind(); got != want[sf.Type.Kind()] {
				t.Errorf("got physical type %v, want %v", got, want[sf.Type.Kind()])
			}
			lt := typ.LogicalType()
			switch sf.Type.Kind() {
			case reflect.String:
				if lt == nil || lt.Value == nil {
					t.Fatalf("got no logical type, want STRING")
				}
				if _, ok := lt.Value.(*format.StringType); !ok {
					t.Errorf("got logical type %v, want STRING", lt)
				}
			case reflect.Int64, reflect.Int:
				if lt != nil && lt.Value != nil {
					it, ok := lt.Value.(*format.IntType)
					if !ok || it.BitWidth != 64 || !it.IsSigned {
						t.Errorf("got logical type %v, want none or INT(64, signed)", lt)
					}
				}
			default:
				if lt != nil && lt.Value != nil {
					t.Errorf("got logical type %v, want none", lt)
				}
			}
		})
	}
	for _, rg := range f.Metadata().RowGroups {
		for _, cc := range rg.Columns {
			if cc.MetaData.Codec != format.Zstd {
				t.Errorf("column %v: got codec %v, want ZSTD", cc.MetaData.PathInSchema, cc.MetaData.Codec)
			}
		}
	}
}

func TestReadParquetErrors(t *testing.T) {
	b := memBucket(t)
	ctx := context.Background()
	good, err := EncodeParquet([]TableRow{{TableID: 1, X: 0, Y: 0, P: 1}})
	if err != nil {
		t.Fatal(err)
	}
	samples, _ := EncodeParquet([]SampleRow{{TableID: 1}})
	truncated := good[:len(good)-5]
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	flipped[len(flipped)/2+1] ^= 0xff
	cases := []struct {
		name string
		data []byte // nil: no object
		want []string
	}{
		{"missing object", nil, []string{"reading bad.parquet", "not found"}},
		{"empty", []byte{}, []string{"reading bad.parquet", "not a valid Parquet file"}},
		{"text", []byte("table_id,x,y,p\n1,0,0,1\n"), []string{"reading bad.parquet", "not a valid Parquet file"}},
		{"truncated", truncated, []string{"reading bad.parquet", "not a valid Parquet file"}},
		{"other schema", samples, []string{"reading bad.parquet", "missing column(s) p"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.Delete(ctx, "bad.parquet")
			if c.data != nil {
				if err := b.WriteAll(ctx, "bad.parquet", c.data, nil); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadParquet[TableRow](ctx, b, "bad.parquet")
			if err == nil {
				t.Fatalf("got no error, want one mentioning %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to mention %q", err, w)
				}
			}
		})
	}
	// Damage inside the data need not be detectable (no page checksums are written),
	// but it must never panic.
	t.Run("flipped bytes do not panic", func(t *testing.T) {
		_, _ = DecodeParquet[TableRow](flipped)
	})
}

func TestWriteJSON(t *testing.T) {
	b := memBucket(t)
	ctx := context.Background()
	s := Summary{Pipeline: "control", Seed: 42, Verdict: Verdict{Holds: true, Decided: true, Reason: "ok"},
		Points: []PointSummary{{PointID: 1, Params: Grid{Samples: 1000, Model: "linear"}, Tables: 3}}}
	if err := WriteJSON(ctx, b, "summary.json", s); err != nil {
		t.Fatal(err)
	}
	data, _ := b.ReadAll(ctx, "summary.json")
	if !bytes.HasSuffix(data, []byte("}\n")) || !bytes.Contains(data, []byte("\n  \"pipeline\": \"control\"")) {
		t.Fatalf("got %q, want indented JSON with a trailing newline", data)
	}
	var back Summary
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("got %+v (%v), want %+v", back, err, s)
	}
	err := WriteJSON(ctx, b, "nan.json", map[string]float64{"x": math.NaN()})
	if err == nil || !strings.Contains(err.Error(), "nan.json") {
		t.Fatalf("got %v, want an error naming nan.json", err)
	}
}

// TestReadParquetRefusesDevices: a results name linked to /dev/zero (or a FIFO) is
// refused before it is read, by name, instead of filling memory or hanging.
func TestReadParquetRefusesDevices(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "results.parquet")); err != nil {
		t.Skipf("symlink: %v", err)
	}
	// A folder opened to write (an output) refuses the link itself; one opened only to
	// read (an input, which may be a link) follows it and refuses the device.
	for _, c := range []struct {
		name string
		open func(context.Context, string) (*blob.Bucket, error)
		want string
	}{
		{"output folder", storage.OpenBucket, "symbolic link"},
		{"input folder", storage.OpenExistingBucket, "is a device, not a regular file"},
	} {
		b, err := c.open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ReadParquet[ResultRow](context.Background(), b, "results.parquet")
		b.Close()
		if err == nil || !strings.Contains(err.Error(), "results.parquet") || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: ReadParquet of a link to /dev/zero = %v, want a refusal naming results.parquet (%q)", c.name, err, c.want)
		}
		t.Logf("%s: refused: %v", c.name, err)
	}
}

// TestWriteSummary: WriteSummary writes what WriteJSON writes, byte for byte, whatever
// the number of points, with and without a protocol, NaNs included.
func TestWriteSummary(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	point := func(id int64) PointSummary {
		return PointSummary{PointID: id, Tables: 10, Floor: math.NaN(), Family: "complete",
			Methods: []MethodSummary{{Method: "jem", Runs: 10}, {Method: "baseline", Runs: 9}},
			Verdict: Verdict{Reason: "FAILS \"quoted\" <b>", Decided: true}}
	}
	for _, tc := range []struct {
		name string
		sum  Summary
	}{
		{"no points", Summary{Pipeline: "control", Seed: 1}},
		{"one point", Summary{Pipeline: "control", Seed: 2, Points: []PointSummary{point(0)}}},
		{"three points and a protocol", Summary{Pipeline: "sweep", Seed: 3, Protocol: &Protocol{Select: "heldout", Checks: "every 20 steps"},
			Points: []PointSummary{point(0), point(1), point(7)}, Verdict: Verdict{Holds: true, Reason: "holds"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := WriteJSON(ctx, b, "want.json", tc.sum); err != nil {
				t.Fatal(err)
			}
			if err := WriteSummary(ctx, b, "got.json", tc.sum); err != nil {
				t.Fatal(err)
			}
			want, _ := b.ReadAll(ctx, "want.json")
			got, _ := b.ReadAll(ctx, "got.json")
			if !bytes.Equal(got, want) {
				t.Errorf("WriteSummary wrote\n%s\nwant\n%s", got, want)
			}
		})
	}
}
