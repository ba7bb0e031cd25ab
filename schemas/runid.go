package schemas

import (
	"fmt"
	"strconv"
)

// formatRunID is RunID's "p%04d-t%07d-%s" without fmt (RunID runs once per run and
// per stage that names runs): the same string for every input.
func formatRunID(pointID, ordinal int64, method string) string {
	if pointID < 0 || ordinal < 0 {
		return fmt.Sprintf("p%04d-t%07d-%s", pointID, ordinal, method)
	}
	b := make([]byte, 0, 14+len(method)+8)
	b = append(b, 'p')
	b = appendZeroPadded(b, pointID, 4)
	b = append(b, "-t"...)
	b = appendZeroPadded(b, ordinal, 7)
	b = append(b, '-')
	b = append(b, method...)
	return string(b)
}

// appendZeroPadded appends v ≥ 0 in decimal, zero-padded to width digits (as %0*d).
func appendZeroPadded(b []byte, v int64, width int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], v, 10)
	for range width - len(d) {
		b = append(b, '0')
	}
	return append(b, d...)
}
