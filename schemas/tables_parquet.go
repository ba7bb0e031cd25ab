package schemas

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// maxPageBytes bounds the declared uncompressed size of one page of a user Parquet
// file: parquet-go allocates it before decompressing. Writers cut pages at about 1 MiB
// (parquet-mr, Arrow, DuckDB, parquet-go), so this only refuses forgeries.
const maxPageBytes = 1 << 27

// readBatch is how many rows are decoded at a time.
const readBatch = 1024

// parseParquetRows reads the rows of a Parquet file of kind f, handing each to add
// with its values (as parseCSVRows) and its row number (from 1), and stopping at add's
// first error; expect is told the number of rows the file declares, once it is
// bounded (checkLayout). parquet-go trusts the footer and page headers, allocating what they declare,
// so before it reads them they are checked against the file's size and f's limits
// (checkParquetFooter, then checkLayout: the declared rows against the row limit);
// rows are then decoded readBatch at a time, never allocated from a declared count,
// so the first bad row is refused after at most a batch, and a panic inside
// parquet-go becomes an error.
func parseParquetRows(f userFile, ra io.ReaderAt, size int64, expect func(n int64), add func(ints []int64, floats []float64, at int64) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("not a readable %s Parquet file: the Parquet reader failed: %v", f.kind, r)
		}
	}()
	pf, err := openUserParquet(ra, size)
	if err != nil {
		return err
	}
	unsigned, err := f.checkSchema(pf.Schema())
	if err != nil {
		return err
	}
	if err := f.checkLayout(ra, size, pf.Metadata()); err != nil {
		return err
	}
	declared := pf.NumRows() // checked: in [0, *f.maxRows]
	expect(declared)
	d := rowDecoder{f: f, unsigned: unsigned, add: add,
		col: make([]int, len(f.columns)), ints: make([]int64, f.ints), floats: make([]float64, len(f.columns)-f.ints)}
	for i, name := range f.columns {
		leaf, _ := pf.Schema().Lookup(name) // checked: present
		d.col[i] = leaf.ColumnIndex
	}
	buf := make([]parquet.Row, min(readBatch, max(declared, 1)))
	for _, rg := range pf.RowGroups() {
		if err := d.readRowGroup(rg, buf); err != nil {
			return err
		}
	}
	if d.n != declared {
		return fmt.Errorf("not a readable %s Parquet file: the footer declares %d rows but %d could be read", f.kind, declared, d.n)
	}
	return nil
}

// rowDecoder converts the rows of a Parquet file of kind f, in scratch slices, and
// hands them to add.
type rowDecoder struct {
	f        userFile
	col      []int // the leaf column index of each of f.columns
	unsigned []int // of each integer column: see checkSchema
	ints     []int64
	floats   []float64
	add      func(ints []int64, floats []float64, at int64) error
	n        int64 // the rows read so far
}

// readRowGroup reads the rows of one row group, decoded a batch of rows at a time
// into buf (parquet.Row values, reused: no allocation per row), each handed to d.add
// before the next batch is read.
func (d *rowDecoder) readRowGroup(rg parquet.RowGroup, buf []parquet.Row) error {
	rows := rg.Rows()
	defer rows.Close()
	for {
		n, err := rows.ReadRows(buf)
		for _, row := range buf[:n] {
			at := d.n + 1
			if at > *d.f.maxRows {
				return d.f.tooManyRows("row", at)
			}
			if err := d.decode(row, at); err != nil {
				return err
			}
			if err := d.add(d.ints, d.floats, at); err != nil {
				return err
			}
			d.n = at
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a readable %s Parquet file: %w", d.f.kind, err)
		}
		if n == 0 {
			return nil
		}
	}
}

// decode puts the values of the row-th row (from 1) in d.ints and d.floats. Unsigned
// columns come as their bits: a UINT_32 value above MaxInt32 is restored, and a
// UINT_64 value above MaxInt64, which would wrap to a negative number, is refused.
func (d *rowDecoder) decode(r parquet.Row, row int64) error {
	f := d.f
	var seen [maxUserColumns]bool
	for _, v := range r {
		j := slices.Index(d.col, v.Column())
		if j < 0 || seen[j] {
			return fmt.Errorf("not a readable %s Parquet file: row %d has a stray value in column %d", f.kind, row, v.Column())
		}
		seen[j] = true
		if v.IsNull() {
			return fmt.Errorf("row %d: %s is null", row, f.columns[j])
		}
		isInt := j < f.ints
		switch k := v.Kind(); {
		case !isInt && k == parquet.Double:
			d.floats[j-f.ints] = v.Double()
		case !isInt && k == parquet.Float:
			d.floats[j-f.ints] = float64(v.Float())
		case isInt && k == parquet.Int64:
			d.ints[j] = v.Int64()
		case isInt && k == parquet.Int32 && d.unsigned[j] == 32:
			d.ints[j] = int64(uint32(v.Int32()))
		case isInt && k == parquet.Int32:
			d.ints[j] = int64(v.Int32())
		default:
			return fmt.Errorf("not a readable %s Parquet file: row %d: %s holds a value of type %s", f.kind, row, f.columns[j], k)
		}
		if isInt && d.unsigned[j] == 64 && d.ints[j] < 0 {
			return fmt.Errorf("row %d: %s %d is too large: the largest supported value is %d (a signed 64-bit integer)",
				row, f.columns[j], uint64(d.ints[j]), int64(math.MaxInt64))
		}
	}
	for j := range f.columns {
		if !seen[j] {
			return fmt.Errorf("row %d: %s is null", row, f.columns[j])
		}
	}
	return nil
}

// checkTableSchema checks the schema of a tables file (see userFile.checkSchema).
func checkTableSchema(s *parquet.Schema) ([]int, error) { return tablesFile.checkSchema(s) }

// checkSchema requires exactly f's columns, the integer ones of plain integer types
// (INT32 or INT64, signed or unsigned) and the others of a floating type (FLOAT or
// DOUBLE). DECIMAL in particular is refused: it would be read as its unscaled integer.
// It returns, for each integer column, the bit width of an unsigned column whose
// values parquet-go reads as their bits (32 or 64), else 0.
func (f userFile) checkSchema(s *parquet.Schema) (unsigned []int, err error) {
	have := map[string]parquet.Field{}
	var extra []string
	for _, field := range s.Fields() {
		if !slices.Contains(f.columns, field.Name()) {
			extra = append(extra, field.Name())
		}
		have[field.Name()] = field
	}
	if len(extra) > 0 {
		return nil, fmt.Errorf("unexpected column(s) %s: want exactly %s", strings.Join(extra, ", "), f.want())
	}
	unsigned = make([]int, f.ints)
	for i, name := range f.columns {
		field, ok := have[name]
		if !ok {
			return nil, fmt.Errorf("missing column %q: want exactly %s", name, f.want())
		}
		typ := field.Type()
		kind, plain := leafKind(typ)
		if !field.Leaf() || field.Repeated() || !plain {
			return nil, fmt.Errorf("column %q is not a plain value column", name)
		}
		lt := typ.LogicalType()
		isFloat := i >= f.ints
		want, cast := "an integer (INT32 or INT64)", "BIGINT"
		ok = (kind == parquet.Int32 || kind == parquet.Int64) && (lt == nil || isIntLogical(lt))
		if isFloat {
			want, cast = "a floating-point number (DOUBLE or FLOAT)", "DOUBLE"
			ok = (kind == parquet.Double || kind == parquet.Float) && (lt == nil || lt.Value == nil)
		} else if ok {
			unsigned[i] = unsignedBits(kind, lt, typ.ConvertedType())
		}
		if !ok {
			return nil, fmt.Errorf("column %q has type %s, want %s (in DuckDB, cast it: %s::%s)",
				name, typ, want, name, cast)
		}
	}
	return unsigned, nil
}

// leafKind is typ.Kind(), with ok false where typ is a group: parquet-go gives a leaf
// column a group type when its converted type says so (MAP_KEY_VALUE), and Kind
// panics on it.
func leafKind(typ parquet.Type) (kind parquet.Kind, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return typ.Kind(), true
}

func isIntLogical(lt *format.LogicalType) bool {
	if lt.Value == nil {
		return true
	}
	_, ok := lt.Value.(*format.IntType)
	return ok
}

// unsignedBits is 32 or 64 for an unsigned integer column as wide as its physical
// type (UINT_32 in INT32, UINT_64 in INT64), else 0: narrower unsigned values fit.
func unsignedBits(kind parquet.Kind, lt *format.LogicalType, ct *deprecated.ConvertedType) int {
	bits := 0
	if lt != nil {
		if it, ok := lt.Value.(*format.IntType); ok && !it.IsSigned {
			bits = int(it.BitWidth)
		}
	} else if ct != nil {
		switch *ct {
		case deprecated.Uint32:
			bits = 32
		case deprecated.Uint64:
			bits = 64
		}
	}
	switch {
	case kind == parquet.Int32 && bits == 32:
		return 32
	case kind == parquet.Int64 && bits == 64:
		return 64
	}
	return 0
}

// checkLayout checks what parquet-go would otherwise trust before it allocates: the
// declared row counts against f's row limit, every column chunk against the file's
// bounds, and every page header (the sizes and value counts it declares) against its
// chunk, maxPageBytes and the row limit. A file that passes can make parquet-go
// allocate at most about maxPageBytes and the row limit's values per page.
func (f userFile) checkLayout(ra io.ReaderAt, size int64, md *format.FileMetaData) error {
	bad := func(msg string, args ...any) error {
		return fmt.Errorf("not a readable %s Parquet file: "+msg, append([]any{f.kind}, args...)...)
	}
	if md.NumRows < 0 {
		return bad("the footer declares %d rows", md.NumRows)
	}
	if md.NumRows > *f.maxRows {
		return fmt.Errorf("the file declares %d rows, more than the %d a %s file may hold (one row per %s)", md.NumRows, *f.maxRows, f.kind, f.row)
	}
	var rows int64
	var bodies bodyChecker // one for the file's pages
	defer bodies.close()
	for g, rg := range md.RowGroups {
		if rg.NumRows < 0 || rg.NumRows > md.NumRows-rows {
			return bad("row group %d declares %d rows, of %d in the file", g, rg.NumRows, md.NumRows)
		}
		rows += rg.NumRows
		for _, cc := range rg.Columns {
			m := cc.MetaData
			name := strings.Join(m.PathInSchema, ".")
			start := m.DataPageOffset // as parquet-go finds the chunk
			if m.DictionaryPageOffset != 0 {
				start = m.DictionaryPageOffset
			}
			if start < 4 || m.TotalCompressedSize < 0 || m.TotalCompressedSize > size-start {
				return bad("row group %d, column %s: the column chunk (%d bytes at %d) is not inside the file of %d bytes",
					g, name, m.TotalCompressedSize, start, size)
			}
			if m.NumValues < 0 || m.NumValues > *f.maxRows {
				return bad("row group %d, column %s declares %d values", g, name, m.NumValues)
			}
			if err := checkPages(ra, start, m.TotalCompressedSize, m.Codec, *f.maxRows, &bodies); err != nil {
				return bad("row group %d, column %s: %v", g, name, err)
			}
		}
	}
	if rows != md.NumRows {
		return bad("the row groups hold %d rows but the footer declares %d", rows, md.NumRows)
	}
	return nil
}

// checkTablesPages checks the pages of a column chunk of a tables file: chunk, which
// starts at byte offset of the file.
func checkTablesPages(chunk []byte, offset int64, codec format.CompressionCodec) error {
	var bodies bodyChecker
	defer bodies.close()
	return checkPages(shifted{chunk, offset}, offset, int64(len(chunk)), codec, maxTablesCells, &bodies)
}

// shifted is a ReaderAt of bytes b that start at offset base.
type shifted struct {
	b    []byte
	base int64
}

func (s shifted) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(s.b).ReadAt(p, off-s.base)
}

// maxPageHeaderBytes bounds the thrift page header of one page (with its statistics).
const maxPageHeaderBytes = 16 << 20

// readPageHeader decodes the page header at byte off of ra, in at most left bytes: a
// window of 64 KiB, grown while the header does not fit. It returns the header and its
// length.
func readPageHeader(ra io.ReaderAt, off, left int64) (format.PageHeader, int, error) {
	for window := min(left, 64<<10); ; window = min(left, window*8) {
		buf := make([]byte, window)
		n, err := ra.ReadAt(buf, off)
		if int64(n) < window {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return format.PageHeader{}, 0, err
		}
		var h format.PageHeader
		r := new(thrift.CompactProtocol).NewReaderFromBytes(buf)
		derr := thrift.NewDecoder(r).Decode(&h)
		if derr == nil {
			return h, r.BytesRead(), nil
		}
		if window == left || window >= maxPageHeaderBytes {
			return format.PageHeader{}, 0, derr
		}
	}
}

// checkPages walks the page headers of one column chunk, the length bytes at byte
// offset of the file ra, of a file of at most maxValues rows, their bodies with
// bodies. It reads one page at a time (a header, then a compressed body of at most
// about maxPageBytes).
func checkPages(ra io.ReaderAt, offset, length int64, codec format.CompressionCodec, maxValues int64, bodies *bodyChecker) error {
	var values int64
	for pos := int64(0); pos < length; {
		at := offset + pos
		h, hn, err := readPageHeader(ra, at, length-pos)
		if err != nil {
			return fmt.Errorf("page header at byte %d: %v", at, err)
		}
		pos += int64(hn)
		switch {
		case h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > length-pos:
			return fmt.Errorf("page at byte %d declares %d bytes, beyond its column chunk", at, h.CompressedPageSize)
		case h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes:
			return fmt.Errorf("page at byte %d declares %d uncompressed bytes, more than the %d allowed", at, h.UncompressedPageSize, maxPageBytes)
		case codec != format.Uncompressed && h.CompressedPageSize > maxPageBytes+maxPageBytes/8:
			return fmt.Errorf("page at byte %d declares %d compressed bytes, more than the %d allowed", at, h.CompressedPageSize, maxPageBytes)
		}
		var n int32
		switch {
		case h.DataPageHeader.Valid:
			n = h.DataPageHeader.V.NumValues
			values += int64(n)
		case h.DataPageHeaderV2.Valid:
			n = h.DataPageHeaderV2.V.NumValues
			values += int64(n)
		case h.DictionaryPageHeader.Valid:
			n = h.DictionaryPageHeader.V.NumValues
		}
		if n < 0 || int64(n) > maxValues || values > maxValues {
			return fmt.Errorf("page at byte %d declares %d values", at, n)
		}
		if codec != format.Uncompressed && h.CompressedPageSize > 0 {
			body := bodies.body(h.CompressedPageSize)
			if _, err := ra.ReadAt(body, offset+pos); err != nil {
				return fmt.Errorf("page at byte %d: %v", at, err)
			}
			limit := int64(h.UncompressedPageSize)
			if v2 := h.DataPageHeaderV2; v2.Valid {
				// The levels come first, uncompressed; the rest may be compressed.
				levels := int64(v2.V.RepetitionLevelsByteLength) + int64(v2.V.DefinitionLevelsByteLength)
				if levels < 0 || levels > int64(len(body)) || levels > limit {
					return fmt.Errorf("page at byte %d declares %d bytes of levels", at, levels)
				}
				body, limit = body[levels:], limit-levels
				if c := v2.V.IsCompressed; c.Valid && !c.V {
					body = nil
				}
			}
			if len(body) > 0 {
				if err := bodies.check(codec, body, limit); err != nil {
					return fmt.Errorf("page at byte %d: %v", at, err)
				}
			}
		} else if v2 := h.DataPageHeaderV2; v2.Valid {
			levels := int64(v2.V.RepetitionLevelsByteLength) + int64(v2.V.DefinitionLevelsByteLength)
			if levels < 0 || levels > int64(h.CompressedPageSize) || levels > int64(h.UncompressedPageSize) {
				return fmt.Errorf("page at byte %d declares %d bytes of levels", at, levels)
			}
		}
		pos += int64(h.CompressedPageSize)
	}
	return nil
}

// maxFooterBytes bounds the footer of a user Parquet file, read whole to be checked:
// a footer describes the row groups and columns, kilobytes to a few megabytes.
const maxFooterBytes = 64 << 20

// openUserParquet checks the frame and footer of the Parquet file ra of size bytes
// (checkParquetFooter) and opens it, reading at offsets: the file is never held whole.
func openUserParquet(ra io.ReaderAt, size int64) (*parquet.File, error) {
	if err := checkParquetFooterAt(ra, size); err != nil {
		return nil, fmt.Errorf("not a valid Parquet file: %w", err)
	}
	pf, err := parquet.OpenFile(ra, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("not a valid Parquet file: %w", err)
	}
	return pf, nil
}

// checkParquetFooterAt is checkParquetFooter of the file ra of size bytes, reading only
// its ends and its footer (at most maxFooterBytes).
func checkParquetFooterAt(ra io.ReaderAt, size int64) error {
	if size < 12 {
		return errors.New("no PAR1 magic at both ends")
	}
	var head, tail [8]byte
	if _, err := ra.ReadAt(head[:4], 0); err != nil {
		return err
	}
	if _, err := ra.ReadAt(tail[:], size-8); err != nil {
		return err
	}
	if string(head[:4]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return errors.New("no PAR1 magic at both ends")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return fmt.Errorf("the footer declares %d bytes, in a file of %d", n, size)
	}
	if n > maxFooterBytes {
		return fmt.Errorf("the footer declares %d bytes, more than the %d allowed", n, maxFooterBytes)
	}
	footer := make([]byte, n)
	if _, err := ra.ReadAt(footer, size-8-n); err != nil {
		return err
	}
	w := thriftWalker{b: footer}
	if err := w.structure(0); err != nil {
		return fmt.Errorf("malformed footer: %w", err)
	}
	return nil
}

// checkParquetFooter checks the frame of a plain (unencrypted) Parquet file and walks
// its footer's thrift encoding, before parquet-go allocates from it: parquet-go
// allocates the footer's declared length, and a list's declared length of elements,
// before reading them. In the compact protocol every list element takes at least one
// byte, so a list longer than the bytes left is a forgery.
func checkParquetFooter(data []byte) error {
	n := len(data)
	if n < 12 || string(data[:4]) != "PAR1" || string(data[n-4:]) != "PAR1" {
		return errors.New("no PAR1 magic at both ends")
	}
	size := int64(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	if size > int64(n-12) {
		return fmt.Errorf("the footer declares %d bytes, in a file of %d", size, n)
	}
	w := thriftWalker{b: data[int64(n-8)-size : n-8]}
	if err := w.structure(0); err != nil {
		return fmt.Errorf("malformed footer: %w", err)
	}
	return nil
}

// thriftWalker reads a thrift compact-protocol encoding without decoding it, checking
// that its nesting is shallow and that no length exceeds the bytes left.
type thriftWalker struct {
	b   []byte
	pos int
}

// maxThriftDepth bounds the nesting of a footer; FileMetaData nests about 8 deep.
const maxThriftDepth = 32

var errThriftEOF = errors.New("truncated")

func (w *thriftWalker) byte() (byte, error) {
	if w.pos >= len(w.b) {
		return 0, errThriftEOF
	}
	w.pos++
	return w.b[w.pos-1], nil
}

func (w *thriftWalker) uvarint() (uint64, error) {
	v, n := binary.Uvarint(w.b[w.pos:])
	if n <= 0 {
		return 0, errors.New("bad varint")
	}
	w.pos += n
	return v, nil
}

// length reads a length of items of at least one byte each.
func (w *thriftWalker) length() (int, error) {
	v, err := w.uvarint()
	if err != nil {
		return 0, err
	}
	if v > uint64(len(w.b)-w.pos) {
		return 0, fmt.Errorf("a length of %d at byte %d exceeds the %d bytes left", v, w.pos, len(w.b)-w.pos)
	}
	return int(v), nil
}

func (w *thriftWalker) skip(n int) error {
	if n > len(w.b)-w.pos {
		return errThriftEOF
	}
	w.pos += n
	return nil
}

func (w *thriftWalker) structure(depth int) error {
	if depth > maxThriftDepth {
		return fmt.Errorf("nested more than %d deep", maxThriftDepth)
	}
	for {
		h, err := w.byte()
		if err != nil {
			return err
		}
		typ := h & 0x0f
		if typ == 0 { // stop
			return nil
		}
		if h>>4 == 0 { // a field id follows, as a zigzag varint
			if _, err := w.uvarint(); err != nil {
				return err
			}
		}
		if typ == 1 || typ == 2 { // a boolean field holds its value in its type
			continue
		}
		if err := w.value(typ, depth); err != nil {
			return err
		}
	}
}

func (w *thriftWalker) value(typ byte, depth int) error {
	switch typ {
	case 1, 2, 3: // a boolean element or a byte
		return w.skip(1)
	case 4, 5, 6: // i16, i32, i64
		_, err := w.uvarint()
		return err
	case 7: // double
		return w.skip(8)
	case 8: // binary
		n, err := w.length()
		if err != nil {
			return err
		}
		return w.skip(n)
	case 9, 10: // list, set
		h, err := w.byte()
		if err != nil {
			return err
		}
		n := int(h >> 4)
		if n == 15 {
			if n, err = w.length(); err != nil {
				return err
			}
		} else if n > len(w.b)-w.pos {
			return errThriftEOF
		}
		for range n {
			if err := w.value(h&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 11: // map
		n, err := w.length()
		if err != nil || n == 0 {
			return err
		}
		kv, err := w.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := w.value(kv>>4, depth+1); err != nil {
				return err
			}
			if err := w.value(kv&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 12: // struct
		return w.structure(depth + 1)
	}
	return fmt.Errorf("unknown type %d at byte %d", typ, w.pos)
}
