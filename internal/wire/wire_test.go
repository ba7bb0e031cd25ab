package wire_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/jemcheck/jemcheck/internal/wire"
	"github.com/jemcheck/jemcheck/internal/wire/wiretest"
)

type inner struct {
	I32  int32
	F32  float32
	Name string
	Vals []float64
}

type sample struct {
	A        int64
	B        float64
	C        bool
	D        string
	E        []int64
	F        []float32
	G        [][]float32
	H        []inner
	M        map[string]float64
	P        *inner
	Arr      [3]uint16
	U8       uint8
	I        int
	hidden   []int // unexported: not encoded
	Nested   inner
	Empty    []string
	NilSlice []string
}

func TestRoundTrip(t *testing.T) {
	wiretest.RoundTrip(t, wire.For[sample](), 500)
	wiretest.RoundTrip(t, wire.For[[]sample](), 50)
	wiretest.RoundTrip(t, wire.For[map[int64][]string](), 50)
}

func TestNilAndEmpty(t *testing.T) {
	c := wire.For[sample]()
	v := sample{Empty: []string{}, M: map[string]float64{}, hidden: []int{1}}
	got, err := c.Decode(c.Encode(v))
	if err != nil {
		t.Fatal(err)
	}
	if got.Empty == nil || got.NilSlice != nil || got.M == nil || got.E != nil || got.P != nil || got.hidden != nil {
		t.Fatalf("nil and empty not kept apart, or an unexported field encoded: %+v", got)
	}
}

func TestNaNBits(t *testing.T) {
	c := wire.For[[]float64]()
	in := []float64{math.NaN(), math.Float64frombits(0x7ff8000000000123), -math.NaN()}
	got, err := c.Decode(c.Encode(in))
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if math.Float64bits(got[i]) != math.Float64bits(in[i]) {
			t.Fatalf("item %d: bits %x, want %x", i, math.Float64bits(got[i]), math.Float64bits(in[i]))
		}
	}
}

func TestMapOrder(t *testing.T) {
	c := wire.For[map[string]float64]()
	m := map[string]float64{}
	for i := range 50 {
		m[strings.Repeat("k", i)] = float64(i)
	}
	first := c.Encode(m)
	for range 20 {
		if !bytes.Equal(c.Encode(m), first) {
			t.Fatal("a map's encoding depends on iteration order")
		}
	}
}

// TestCorrupt: every truncation of an encoding and random byte changes decode to an
// error or a value, never a panic, and a declared count beyond the input is refused
// before anything is allocated for it.
func TestCorrupt(t *testing.T) {
	c := wire.For[sample]()
	rng := rand.New(rand.NewPCG(3, 4))
	var v sample
	wiretest.Fill(rng, reflect.ValueOf(&v).Elem(), 0)
	v.G = [][]float32{{1, 2}, {3}}
	b := c.Encode(v)
	for n := range len(b) {
		if _, err := c.Decode(b[:n]); err == nil {
			t.Fatalf("a truncation to %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := c.Decode(append(b, 0)); err == nil {
		t.Fatal("a trailing byte decoded")
	}
	for range 2000 {
		m := bytes.Clone(b)
		for range 1 + rng.IntN(4) {
			m[rng.IntN(len(m))] = byte(rng.Uint32())
		}
		_, _ = c.Decode(m) // must not panic
	}
	huge := wire.For[[]float64]()
	bomb := []byte{0xff, 0xff, 0xff, 0xff, 0x0f} // a count of ~4e9 items, then nothing
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := huge.Decode(bomb)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("a count beyond the input: %v", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<16 {
		t.Fatalf("refusing a count beyond the input allocated %d bytes", d)
	}
}

func TestUnsupported(t *testing.T) {
	for name, f := range map[string]func(){
		"interface": func() { wire.For[struct{ X any }]() },
		"func":      func() { wire.For[struct{ F func() }]() },
		"chan":      func() { wire.For[chan int]() },
		"complex":   func() { wire.For[complex128]() },
		"map key":   func() { wire.For[map[float64]int]() },
		"recursive": func() { type node struct{ Next *node }; wire.For[node]() },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}

// FuzzDecode: any input decodes to an error or to a value whose encoding decodes and
// encodes again to the same bytes; never a panic (a runner hands the decoder whatever
// bytes it holds). The input itself need not come back: a map's entries in another
// order or an overlong count decode, and encode canonically.
func FuzzDecode(f *testing.F) {
	c := wire.For[sample]()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		var v sample
		wiretest.Fill(rng, reflect.ValueOf(&v).Elem(), 0)
		f.Add(c.Encode(v))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c.Decode(b)
		if err != nil {
			return
		}
		b2 := c.Encode(v)
		v2, err := c.Decode(b2)
		if err != nil {
			t.Fatalf("%x decoded, and its value's encoding %x does not: %v", b, b2, err)
		}
		if !bytes.Equal(c.Encode(v2), b2) {
			t.Fatalf("%x: its value's encoding does not come back", b)
		}
	})
}

// raw holds runs of numbers side by side (copied as one), padding, a bool and an
// unexported field between them, arrays and slices of raw items and of raw structs.
type raw struct {
	A, B    float64
	C       int64
	D       int32 // then 4 bytes of padding: a run ends
	E       float64
	F       bool // not raw: decoding checks it
	G       uint16
	H       [3]float32
	skip    float64
	I, J    uint64
	K       []float64
	L       []pair
	M       [2]pair
	N       []padded
	O       [0]float64
	Tail    uint8
	Strings []string
}

type pair struct{ X, Y float64 }

type padded struct {
	X int8
	Y int64
}

func TestRawRuns(t *testing.T) {
	wiretest.RoundTrip(t, wire.For[raw](), 500)
	wiretest.RoundTrip(t, wire.For[[]raw](), 50)
	wiretest.RoundTrip(t, wire.For[[]float64](), 50)
	wiretest.RoundTrip(t, wire.For[[4]int64](), 50)
	wiretest.RoundTrip(t, wire.For[pair](), 50)
	// A truncated run is an error, not a partial copy past the input.
	c := wire.For[raw]()
	b := c.Encode(raw{K: []float64{1, 2, 3}, skip: 7})
	if got, err := c.Decode(b); err != nil || got.skip != 0 || len(got.K) != 3 {
		t.Fatalf("decoded %+v, %v: want K back and the unexported field left out", got, err)
	}
	for cut := range len(b) {
		if _, err := c.Decode(b[:cut]); err == nil {
			t.Fatalf("decoding %d of %d bytes: no error", cut, len(b))
		}
	}
}
