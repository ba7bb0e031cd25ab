// Package wire is a compact binary encoding of the pipeline's element types (result
// blocks, learned blocks, the aggregate's accumulators), compiled once per type from its
// reflect.Type into a plan of field offsets, so that encoding an element walks memory
// instead of reflecting on every field of every row.
//
// Beam's default row coder reflects per field per element (reflect.Value.Field, a row
// header per struct), and a runner encodes an element not only where it crosses a stage
// boundary but also to sample PCollection sizes (the first elements of every bundle): on
// a 100,000-table job it was 0.9 of 6.6 CPU seconds. The stages register this encoding for
// their element types (beam.RegisterCoder).
//
// The format: fields in declaration order, exported fields only (as Beam's row coder);
// fixed-width little-endian numbers (int, int64, uint64, float64: 8 bytes; int32,
// uint32, float32: 4; int16, uint16: 2; bool, int8, uint8: 1); strings, slices and maps
// as a uvarint count + 1 (0 is nil, so nil and empty survive a round trip) and their
// items; map entries in key order (so an encoding is a function of the value); pointers
// as a presence byte and the value. Decode checks every count against the bytes left
// before it allocates, so a corrupt or truncated input is an error, never a panic or an
// allocation larger than the input. Types the format cannot hold (interfaces, channels,
// functions, complex numbers) make For panic when the plan is built: at init, in a test.
package wire

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"unsafe"
)

// Codec encodes and decodes values of type T.
type Codec[T any] struct {
	p *plan
}

// For builds T's codec. It panics if T holds a kind the format cannot encode.
func For[T any]() *Codec[T] {
	t := reflect.TypeFor[T]()
	p, err := compile(t, map[reflect.Type]*plan{})
	if err != nil {
		panic(fmt.Sprintf("wire: %v: %v", t, err))
	}
	return &Codec[T]{p: p}
}

// Encode returns v's encoding.
func (c *Codec[T]) Encode(v T) []byte {
	ptr := unsafe.Pointer(&v)
	return c.p.enc(make([]byte, 0, c.p.size(ptr)), ptr) // sized first: one allocation, no copying as it grows
}

// Size is the length of v's encoding (Encode sizes its buffer with it).
func (c *Codec[T]) Size(v T) int { return c.p.size(unsafe.Pointer(&v)) }

// Decode decodes an encoding of T; trailing bytes are an error.
func (c *Codec[T]) Decode(b []byte) (T, error) {
	var v T
	r := reader{b: b}
	c.p.dec(&r, unsafe.Pointer(&v))
	if r.err == nil && r.off != len(b) {
		r.err = fmt.Errorf("%d trailing bytes", len(b)-r.off)
	}
	if r.err != nil {
		var zero T
		return zero, fmt.Errorf("wire: decoding %v: %w", reflect.TypeFor[T](), r.err)
	}
	return v, nil
}

// plan encodes and decodes one type at a pointer to it. min is the least number of
// bytes an encoding of the type takes (the bound on a declared count).
type plan struct {
	t     reflect.Type
	min   int
	fixed int                        // > 0: every encoding of the type takes exactly this many bytes
	raw   bool                       // the encoding is the value's memory, byte for byte (a little-endian number, or a run of them with no padding)
	size  func(p unsafe.Pointer) int // the encoding's length (fixed where fixed > 0)
	enc   func(b []byte, p unsafe.Pointer) []byte
	dec   func(r *reader, p unsafe.Pointer)
}

// uvarintLen is the length of v's uvarint encoding.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

var errShort = errors.New("truncated input")

// reader is a decoding position; the first error sticks and later reads return zeros.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = errShort
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

// copyTo copies the next n bytes to the memory at ptr (a raw value's bytes).
func (r *reader) copyTo(ptr unsafe.Pointer, n int) {
	if s := r.take(n); s != nil {
		copy(unsafe.Slice((*byte)(ptr), n), s)
	}
}

// littleEndian: this machine's numbers are laid out as the format's, so a run of them
// is copied as it is in memory (see plan.raw).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// count reads a count + 1 (0: nil) of items of at least min bytes each, refusing one
// that the bytes left cannot hold. It returns −1 for nil.
func (r *reader) count(min int) int {
	if r.err != nil {
		return -1
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = errShort
		return -1
	}
	r.off += n
	if v == 0 {
		return -1
	}
	c := v - 1
	left := uint64(len(r.b) - r.off)
	if min > 0 && c > left/uint64(min) || c > math.MaxInt32 {
		r.err = fmt.Errorf("a count of %d items does not fit in the %d bytes left", c, left)
		return -1
	}
	return int(c)
}

func putCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func compile(t reflect.Type, seen map[reflect.Type]*plan) (*plan, error) {
	if p, ok := seen[t]; ok {
		if p.enc == nil {
			return nil, errors.New("recursive type")
		}
		return p, nil
	}
	p := &plan{t: t}
	seen[t] = p
	switch t.Kind() {
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		fixed(p, 1)
	case reflect.Int16, reflect.Uint16:
		fixed(p, 2)
	case reflect.Int32, reflect.Uint32, reflect.Float32:
		fixed(p, 4)
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Float64, reflect.Uintptr:
		if t.Size() != 8 {
			return nil, fmt.Errorf("%v is not 8 bytes here", t)
		}
		fixed(p, 8)
	case reflect.String:
		p.min = 1
		p.size = func(ptr unsafe.Pointer) int {
			n := len(*(*string)(ptr))
			return uvarintLen(uint64(n)) + n
		}
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			s := *(*string)(ptr)
			b = binary.AppendUvarint(b, uint64(len(s)))
			return append(b, s...)
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			if r.err != nil {
				return
			}
			n, k := binary.Uvarint(r.b[r.off:])
			if k <= 0 || n > uint64(len(r.b)-r.off-k) {
				r.err = errShort
				return
			}
			r.off += k
			*(*string)(ptr) = string(r.take(int(n)))
		}
	case reflect.Array:
		e, err := compile(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		n, size := t.Len(), t.Elem().Size()
		p.min = n * e.min
		if e.fixed > 0 {
			p.fixed = n * e.fixed
		}
		if e.raw && n > 0 {
			p.raw = true
			p.size = func(unsafe.Pointer) int { return p.fixed }
			p.enc = func(b []byte, ptr unsafe.Pointer) []byte { return append(b, unsafe.Slice((*byte)(ptr), p.fixed)...) }
			p.dec = func(r *reader, ptr unsafe.Pointer) { r.copyTo(ptr, p.fixed) }
			break
		}
		p.size = func(ptr unsafe.Pointer) int {
			if p.fixed > 0 {
				return p.fixed
			}
			t := 0
			for i := range n {
				t += e.size(unsafe.Add(ptr, uintptr(i)*size))
			}
			return t
		}
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			for i := range n {
				b = e.enc(b, unsafe.Add(ptr, uintptr(i)*size))
			}
			return b
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			for i := range n {
				e.dec(r, unsafe.Add(ptr, uintptr(i)*size))
			}
		}
	case reflect.Slice:
		e, err := compile(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		size := t.Elem().Size()
		elemMin := e.min
		if elemMin == 0 && size > 0 {
			elemMin = 1 // an item that encodes to nothing still takes memory: bound its count by the bytes
		}
		p.min = 1
		p.size = func(ptr unsafe.Pointer) int {
			h := (*sliceHeader)(ptr)
			t := uvarintLen(uint64(h.len) + 1)
			if e.fixed > 0 {
				return t + h.len*e.fixed
			}
			for i := range h.len {
				t += e.size(unsafe.Add(h.data, uintptr(i)*size))
			}
			return t
		}
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			h := (*sliceHeader)(ptr)
			b = putCount(b, h.len, h.data == nil)
			if e.raw { // the items' memory is their encoding: one copy
				return append(b, unsafe.Slice((*byte)(h.data), uintptr(h.len)*size)...)
			}
			for i := range h.len {
				b = e.enc(b, unsafe.Add(h.data, uintptr(i)*size))
			}
			return b
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			n := r.count(elemMin)
			if n < 0 {
				return
			}
			s := reflect.MakeSlice(t, n, n)
			reflect.NewAt(t, ptr).Elem().Set(s) // a typed store: the slice is reachable from here on
			base := s.UnsafePointer()
			if e.raw {
				r.copyTo(base, n*int(size))
				return
			}
			for i := range n {
				e.dec(r, unsafe.Add(base, uintptr(i)*size))
			}
		}
	case reflect.Map:
		return compileMap(p, t, seen)
	case reflect.Pointer:
		e, err := compile(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		p.min = 1
		p.size = func(ptr unsafe.Pointer) int {
			if q := *(*unsafe.Pointer)(ptr); q != nil {
				return 1 + e.size(q)
			}
			return 1
		}
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			q := *(*unsafe.Pointer)(ptr)
			if q == nil {
				return append(b, 0)
			}
			return e.enc(append(b, 1), q)
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			f := r.take(1)
			switch {
			case f == nil, f[0] == 0:
				return
			case f[0] != 1:
				r.err = errors.New("a presence byte that is neither 0 nor 1")
				return
			}
			v := reflect.New(t.Elem())
			reflect.NewAt(t, ptr).Elem().Set(v)
			e.dec(r, v.UnsafePointer())
		}
	case reflect.Struct:
		type field struct {
			off uintptr
			p   *plan
		}
		var fs []field
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue // as Beam's row coder: unexported fields are the value's own caches
			}
			fp, err := compile(f.Type, seen)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			fs = append(fs, field{f.Offset, fp})
			p.min += fp.min
		}
		var vars []field // the fields whose length varies; the others add up to constant
		constant := 0
		for _, f := range fs {
			if f.p.fixed > 0 {
				constant += f.p.fixed
			} else {
				vars = append(vars, f)
			}
		}
		if len(vars) == 0 && constant > 0 {
			p.fixed = constant
		}
		p.size = func(ptr unsafe.Pointer) int {
			t := constant
			for _, f := range vars {
				t += f.p.size(unsafe.Add(ptr, f.off))
			}
			return t
		}
		// Runs of raw fields side by side in memory (no padding between them) are one
		// copy each: a result row's 120 fields are a few runs.
		type step struct {
			off uintptr
			raw int   // > 0: copy this many bytes
			p   *plan // otherwise: the field's plan
		}
		var steps []step
		for _, f := range fs {
			if f.p.raw {
				if k := len(steps) - 1; k >= 0 && steps[k].raw > 0 && steps[k].off+uintptr(steps[k].raw) == f.off {
					steps[k].raw += f.p.fixed
					continue
				}
				steps = append(steps, step{off: f.off, raw: f.p.fixed})
				continue
			}
			steps = append(steps, step{off: f.off, p: f.p})
		}
		p.raw = len(steps) == 1 && steps[0].raw > 0 && steps[0].off == 0 && uintptr(steps[0].raw) == t.Size()
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			for _, st := range steps {
				if st.raw > 0 {
					b = append(b, unsafe.Slice((*byte)(unsafe.Add(ptr, st.off)), st.raw)...)
					continue
				}
				b = st.p.enc(b, unsafe.Add(ptr, st.off))
			}
			return b
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			for _, st := range steps {
				if st.raw > 0 {
					r.copyTo(unsafe.Add(ptr, st.off), st.raw)
					continue
				}
				st.p.dec(r, unsafe.Add(ptr, st.off))
			}
		}
	default:
		return nil, fmt.Errorf("kind %v cannot be encoded", t.Kind())
	}
	return p, nil
}

// sliceHeader is the layout of a slice (the runtime's, as unsafe.Slice builds).
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// fixed is the plan of an n-byte number, copied little-endian.
func fixed(p *plan, n int) {
	p.min, p.fixed = n, n
	p.raw = littleEndian && p.t.Kind() != reflect.Bool && uintptr(n) == p.t.Size()
	p.size = func(unsafe.Pointer) int { return n }
	switch n {
	case 1:
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte { return append(b, *(*uint8)(ptr)) }
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			if s := r.take(1); s != nil {
				*(*uint8)(ptr) = s[0]
			}
		}
		if p.t.Kind() == reflect.Bool {
			p.dec = func(r *reader, ptr unsafe.Pointer) {
				s := r.take(1)
				switch {
				case s == nil:
				case s[0] > 1:
					r.err = errors.New("a bool that is neither 0 nor 1")
				default:
					*(*bool)(ptr) = s[0] == 1
				}
			}
		}
	case 2:
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint16(b, *(*uint16)(ptr))
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			if s := r.take(2); s != nil {
				*(*uint16)(ptr) = binary.LittleEndian.Uint16(s)
			}
		}
	case 4:
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint32(b, *(*uint32)(ptr))
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			if s := r.take(4); s != nil {
				*(*uint32)(ptr) = binary.LittleEndian.Uint32(s)
			}
		}
	case 8:
		p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint64(b, *(*uint64)(ptr))
		}
		p.dec = func(r *reader, ptr unsafe.Pointer) {
			if s := r.take(8); s != nil {
				*(*uint64)(ptr) = binary.LittleEndian.Uint64(s)
			}
		}
	}
}

// compileMap encodes a map's entries in key order. Keys must be strings or numbers
// (ordered kinds), so the encoding of a map is a function of its contents.
func compileMap(p *plan, t reflect.Type, seen map[reflect.Type]*plan) (*plan, error) {
	kt := t.Key()
	var less func(a, b reflect.Value) int
	switch kt.Kind() {
	case reflect.String:
		less = func(a, b reflect.Value) int { return cmp.Compare(a.String(), b.String()) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		less = func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		less = func(a, b reflect.Value) int { return cmp.Compare(a.Uint(), b.Uint()) }
	default:
		return nil, fmt.Errorf("map key kind %v has no order", kt.Kind())
	}
	kp, err := compile(kt, seen)
	if err != nil {
		return nil, err
	}
	vp, err := compile(t.Elem(), seen)
	if err != nil {
		return nil, err
	}
	p.min = 1
	p.size = func(ptr unsafe.Pointer) int {
		m := reflect.NewAt(t, ptr).Elem()
		n := uvarintLen(uint64(m.Len()) + 1)
		k, v := reflect.New(kt).Elem(), reflect.New(t.Elem()).Elem()
		for it := m.MapRange(); it.Next(); {
			k.SetIterKey(it)
			v.SetIterValue(it)
			n += kp.size(k.Addr().UnsafePointer()) + vp.size(v.Addr().UnsafePointer())
		}
		return n
	}
	p.enc = func(b []byte, ptr unsafe.Pointer) []byte {
		m := reflect.NewAt(t, ptr).Elem()
		b = putCount(b, m.Len(), m.IsNil())
		keys := m.MapKeys()
		slices.SortFunc(keys, less)
		k, v := reflect.New(kt).Elem(), reflect.New(t.Elem()).Elem()
		for _, key := range keys {
			k.Set(key)
			v.Set(m.MapIndex(key))
			b = kp.enc(b, k.Addr().UnsafePointer())
			b = vp.enc(b, v.Addr().UnsafePointer())
		}
		return b
	}
	p.dec = func(r *reader, ptr unsafe.Pointer) {
		n := r.count(kp.min + vp.min)
		if n < 0 {
			return
		}
		m := reflect.MakeMapWithSize(t, n)
		for range n {
			k, v := reflect.New(kt), reflect.New(t.Elem())
			kp.dec(r, k.UnsafePointer())
			vp.dec(r, v.UnsafePointer())
			if r.err != nil {
				return
			}
			m.SetMapIndex(k.Elem(), v.Elem())
		}
		if m.Len() != n {
			r.err = errors.New("a map with a repeated key")
			return
		}
		reflect.NewAt(t, ptr).Elem().Set(m)
	}
	return p, nil
}
