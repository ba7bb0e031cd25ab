// Package wiretest checks package wire's encodings of a type on random values.
package wiretest

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
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
// of the value, that it is the format's bytes (Format: field by field, independent of the
// codec's copies of raw runs), and that Size is the encoding's length. The stages' test runs it on every element type they register.
func RoundTrip[T any](t *testing.T, c *wire.Codec[T], n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		var v T
		Fill(rng, reflect.ValueOf(&v).Elem(), 0)
		b := c.Encode(v)
		if want := Format(reflect.ValueOf(v)); !bytes.Equal(b, want) {
			t.Fatalf("value %d: encoding\n%x\nwant the format's\n%x", i, b, want)
		}
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

// Format is v's encoding as package wire documents it, written value by value with
// reflect: the reference the codecs' compiled plans are checked against.
func Format(v reflect.Value) []byte { return appendFormat(nil, v) }

func appendFormat(b []byte, v reflect.Value) []byte {
	le := binary.LittleEndian
	count := func(b []byte, n int, isNil bool) []byte {
		if isNil {
			return append(b, 0)
		}
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int8, reflect.Uint8, reflect.Int16, reflect.Uint16, reflect.Int32, reflect.Uint32,
		reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		var u uint64
		if v.CanInt() {
			u = uint64(v.Int())
		} else {
			u = v.Uint()
		}
		switch v.Type().Size() {
		case 1:
			return append(b, byte(u))
		case 2:
			return le.AppendUint16(b, uint16(u))
		case 4:
			return le.AppendUint32(b, uint32(u))
		}
		return le.AppendUint64(b, u)
	case reflect.Float32:
		return le.AppendUint32(b, math.Float32bits(float32(v.Float())))
	case reflect.Float64:
		return le.AppendUint64(b, math.Float64bits(v.Float()))
	case reflect.String:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		return append(b, v.String()...)
	case reflect.Array:
		for i := range v.Len() {
			b = appendFormat(b, v.Index(i))
		}
		return b
	case reflect.Slice:
		b = count(b, v.Len(), v.IsNil())
		for i := range v.Len() {
			b = appendFormat(b, v.Index(i))
		}
		return b
	case reflect.Map:
		b = count(b, v.Len(), v.IsNil())
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int {
			switch {
			case x.Kind() == reflect.String:
				return cmp.Compare(x.String(), y.String())
			case x.CanInt():
				return cmp.Compare(x.Int(), y.Int())
			}
			return cmp.Compare(x.Uint(), y.Uint())
		})
		for _, k := range keys {
			b = appendFormat(appendFormat(b, k), v.MapIndex(k))
		}
		return b
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 0)
		}
		return appendFormat(append(b, 1), v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				b = appendFormat(b, v.Field(i))
			}
		}
		return b
	}
	panic("wiretest: kind " + v.Kind().String() + " has no format")
}
