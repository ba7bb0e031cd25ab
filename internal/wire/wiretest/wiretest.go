// Package wiretest checks package wire's encodings of a type on random values.
package wiretest

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/wire"
)

// Fill sets every exported field of v (addressable) to random data, with NaN, ±Inf,
// nil and empty among them.
func Fill(rng *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(rng.Int64() >> (rng.IntN(64)))
		if rng.IntN(2) == 0 {
			v.SetInt(-v.Int())
		}
		if !v.CanInt() || v.OverflowInt(v.Int()) {
			v.SetInt(1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(rng.Uint64() & (1<<(8*v.Type().Size()) - 1)) // 1<<64 is 0 in uint64: all bits
	case reflect.Float32, reflect.Float64:
		x := []float64{rng.NormFloat64() * 1e3, math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324}[rng.IntN(6)]
		v.SetFloat(x)
	case reflect.String:
		v.SetString(strings.Repeat("é", rng.IntN(5)) + "x")
	case reflect.Slice:
		if depth > 3 || rng.IntN(5) == 0 {
			return // nil
		}
		n := rng.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			Fill(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			Fill(rng, v.Index(i), depth+1)
		}
	case reflect.Map:
		if rng.IntN(5) == 0 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(4) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			Fill(rng, k, depth+1)
			Fill(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if rng.IntN(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		Fill(rng, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				Fill(rng, v.Field(i), depth+1)
			}
		}
	}
}

// RoundTrip checks, on random values of T, that decoding an encoding gives the value
// back (reflect.DeepEqual; the random values hold no NaN, which DeepEqual cannot
// compare: NaN's bits are checked by wire's TestNaNBits) and that the encoding is a function
// of the value, and that Size is the encoding's length. The stages' test runs it on every element type they register.
func RoundTrip[T any](t *testing.T, c *wire.Codec[T], n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		var v T
		Fill(rng, reflect.ValueOf(&v).Elem(), 0)
		b := c.Encode(v)
		if n := c.Size(v); n != len(b) {
			t.Fatalf("value %d: Size %d, encoding %d bytes", i, n, len(b))
		}
		got, err := c.Decode(b)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if !reflect.DeepEqual(exported(v), exported(got)) {
			t.Fatalf("value %d: decoded %+v, want %+v", i, got, v)
		}
		if b2 := c.Encode(got); !bytes.Equal(b, b2) {
			t.Fatalf("value %d: the encoding of the decoded value differs", i)
		}
	}
}

// exported is v with its unexported fields cleared (they are not encoded).
func exported[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	if rv.Kind() == reflect.Struct {
		for i := range rv.NumField() {
			if !rv.Type().Field(i).IsExported() {
				f := rv.Field(i)
				reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem().SetZero()
			}
		}
	}
	return v
}
