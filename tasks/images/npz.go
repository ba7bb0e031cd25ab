package images

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strconv"
	"strings"
)

// The arrays of an images export (pipelines/export) as numpy reads them without
// jemcheck: one .npz file per task, a zip archive of .npy files (format 1.0: the magic
// "\x93NUMPY", version 1.0, a little-endian uint16 header length, a Python dict literal
// with descr, fortran_order and shape, padded with spaces to a multiple of 64 bytes
// and ended by "\n", then the raw little-endian data in C order). Members are stored
// uncompressed with a fixed time stamp, so the same arrays give the same bytes.

// npyArray is one array of an .npz file: its name (the member is name + ".npy"), numpy
// dtype descr ("<f8", "<i8", "|b1"), shape and raw data.
type npyArray struct {
	name  string
	descr string
	shape []int
	data  []byte
}

// npyHeader is the .npy header of an array of descr and shape.
func npyHeader(descr string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := "(" + strings.Join(dims, ", ") + ")"
	if len(shape) == 1 {
		tuple = "(" + dims[0] + ",)"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, tuple)
	const prefix = 10 // magic (6), version (2), header length (2)
	pad := 64 - (prefix+len(dict)+1)%64
	if pad == 64 {
		pad = 0
	}
	h := make([]byte, 0, prefix+len(dict)+pad+1)
	h = append(h, "\x93NUMPY\x01\x00"...)
	h = binary.LittleEndian.AppendUint16(h, uint16(len(dict)+pad+1))
	h = append(h, dict...)
	h = append(h, strings.Repeat(" ", pad)...)
	return append(h, '\n')
}

// npyBytes is the .npy file of a.
func (a npyArray) npyBytes() []byte { return append(npyHeader(a.descr, a.shape), a.data...) }

// writeNPZ writes the arrays as an .npz archive to w, in order.
func writeNPZ(w io.Writer, arrays []npyArray) error {
	z := zip.NewWriter(w)
	for _, a := range arrays {
		n := 1
		for _, d := range a.shape {
			n *= d
		}
		if size := npySize(a.descr); n*size != len(a.data) {
			return fmt.Errorf("npz: array %s of shape %v and dtype %s has %d bytes, want %d", a.name, a.shape, a.descr, len(a.data), n*size)
		}
		b := a.npyBytes()
		h := &zip.FileHeader{Name: a.name + ".npy", Method: zip.Store, CRC32: crc32.ChecksumIEEE(b),
			CompressedSize64: uint64(len(b)), UncompressedSize64: uint64(len(b))}
		h.SetMode(0o644)
		fw, err := z.CreateRaw(h)
		if err != nil {
			return fmt.Errorf("npz: %s: %w", a.name, err)
		}
		if _, err := fw.Write(b); err != nil {
			return fmt.Errorf("npz: %s: %w", a.name, err)
		}
	}
	return z.Close()
}

// npySize is the bytes of one value of descr.
func npySize(descr string) int {
	switch descr {
	case "|b1", "|u1":
		return 1
	case "<f4", "<i4":
		return 4
	}
	return 8
}

// f8 is v as "<f8" data.
func f8(v []float64) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// i8 is v as "<i8" data.
func i8[T int | int32 | int64](v []T) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(int64(x)))
	}
	return b
}

// b1 is v as "|b1" data (numpy bool: 0 or 1).
func b1(v []bool) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		if x {
			b[i] = 1
		}
	}
	return b
}
