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

// maxTablesPageBytes bounds the declared uncompressed size of one page of a tables
// Parquet file: parquet-go allocates it before decompressing. Writers cut pages at
// about 1 MiB (parquet-mr, Arrow, DuckDB, parquet-go), so this only refuses forgeries.
const maxTablesPageBytes = 1 << 27

// tablesReadBatch is how many rows are decoded at a time.
const tablesReadBatch = 1024

// parseTablesParquet reads the cells of a tables Parquet file. parquet-go trusts the
// footer and page headers, allocating what they declare, so before it reads them
// they are checked against the file's size and the limits (checkParquetFooter, then
// checkTablesLayout); rows are then decoded in batches, never allocated from a
// declared count, and a panic inside parquet-go becomes an error.
func parseTablesParquet(data []byte) (cells []cell, err error) {
	defer func() {
		if r := recover(); r != nil {
			cells, err = nil, fmt.Errorf("not a readable tables Parquet file: the Parquet reader failed: %v", r)
		}
	}()
	if err := checkParquetFooter(data); err != nil {
		return nil, fmt.Errorf("not a valid Parquet file: %w", err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)),
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("not a valid Parquet file: %w", err)
	}
	unsigned, err := checkTableSchema(f.Schema())
	if err != nil {
		return nil, err
	}
	if err := checkTablesLayout(data, f.Metadata()); err != nil {
		return nil, err
	}
	declared := f.NumRows() // checked: in [0, maxTablesCells]
	// A capacity hint only: an honest file rarely stores a row in under a byte, and
	// when it does (run-length encoding) append grows the slice as rows really decode.
	cells = make([]cell, 0, min(declared, int64(len(data))))
	col := [4]int{} // the leaf column index of table_id, x, y, p
	for i, name := range tableColumns {
		leaf, _ := f.Schema().Lookup(name) // checked: present
		col[i] = leaf.ColumnIndex
	}
	buf := make([]parquet.Row, min(tablesReadBatch, max(declared, 1)))
	for _, rg := range f.RowGroups() {
		if err := readTableCells(rg, col, unsigned, buf, &cells); err != nil {
			return nil, err
		}
	}
	if int64(len(cells)) != declared {
		return nil, fmt.Errorf("not a readable tables Parquet file: the footer declares %d rows but %d could be read", declared, len(cells))
	}
	return cells, nil
}

// readTableCells appends the cells of one row group, decoded a batch of rows at a
// time into buf (parquet.Row values, reused: no allocation per row).
func readTableCells(rg parquet.RowGroup, col [4]int, unsigned [3]int, buf []parquet.Row, cells *[]cell) error {
	rows := rg.Rows()
	defer rows.Close()
	for {
		n, err := rows.ReadRows(buf)
		for _, row := range buf[:n] {
			if int64(len(*cells)) >= maxTablesCells {
				return tooManyRows("row", int64(len(*cells))+1)
			}
			c, err := tableCell(row, col, unsigned, int64(len(*cells))+1)
			if err != nil {
				return err
			}
			*cells = append(*cells, c)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a readable tables Parquet file: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
}

// tableCell converts the row-th row (from 1). Unsigned columns come as their bits: a
// UINT_32 value above MaxInt32 is restored, and a UINT_64 value above MaxInt64, which
// would wrap to a negative number, is refused.
func tableCell(r parquet.Row, col [4]int, unsigned [3]int, row int64) (cell, error) {
	var ints [3]int64
	var p float64
	var seen [4]bool
	for _, v := range r {
		j := slices.Index(col[:], v.Column())
		if j < 0 || seen[j] {
			return cell{}, fmt.Errorf("not a readable tables Parquet file: row %d has a stray value in column %d", row, v.Column())
		}
		seen[j] = true
		if v.IsNull() {
			return cell{}, fmt.Errorf("row %d: %s is null", row, tableColumns[j])
		}
		switch k := v.Kind(); {
		case j == 3 && k == parquet.Double:
			p = v.Double()
		case j == 3 && k == parquet.Float:
			p = float64(v.Float())
		case j < 3 && k == parquet.Int64:
			ints[j] = v.Int64()
		case j < 3 && k == parquet.Int32 && unsigned[j] == 32:
			ints[j] = int64(uint32(v.Int32()))
		case j < 3 && k == parquet.Int32:
			ints[j] = int64(v.Int32())
		default:
			return cell{}, fmt.Errorf("not a readable tables Parquet file: row %d: %s holds a value of type %s", row, tableColumns[j], k)
		}
		if j < 3 && unsigned[j] == 64 && ints[j] < 0 {
			return cell{}, fmt.Errorf("row %d: %s %d is too large: the largest supported value is %d (a signed 64-bit integer)",
				row, tableColumns[j], uint64(ints[j]), int64(math.MaxInt64))
		}
	}
	for j, ok := range seen {
		if !ok {
			return cell{}, fmt.Errorf("row %d: %s is null", row, tableColumns[j])
		}
	}
	return cell{TableRow: TableRow{TableID: ints[0], X: ints[1], Y: ints[2], P: p}, at: row}, nil
}

// checkTableSchema requires exactly the columns table_id, x, y, p, the first three of
// plain integer types (INT32 or INT64, signed or unsigned) and p of a floating type
// (FLOAT or DOUBLE). DECIMAL in particular is refused: it would be read as its
// unscaled integer. It returns, for table_id, x and y, the bit width of unsigned
// columns whose values parquet-go reads as their bits (32 or 64), else 0.
func checkTableSchema(s *parquet.Schema) (unsigned [3]int, err error) {
	have := map[string]parquet.Field{}
	var extra []string
	for _, field := range s.Fields() {
		if !slices.Contains(tableColumns, field.Name()) {
			extra = append(extra, field.Name())
		}
		have[field.Name()] = field
	}
	if len(extra) > 0 {
		return unsigned, fmt.Errorf("unexpected column(s) %s: want exactly table_id, x, y, p", strings.Join(extra, ", "))
	}
	for i, name := range tableColumns {
		field, ok := have[name]
		if !ok {
			return unsigned, fmt.Errorf("missing column %q: want exactly table_id, x, y, p", name)
		}
		typ := field.Type()
		kind, plain := leafKind(typ)
		if !field.Leaf() || field.Repeated() || !plain {
			return unsigned, fmt.Errorf("column %q is not a plain value column", name)
		}
		lt := typ.LogicalType()
		want := "an integer (INT32 or INT64)"
		ok = (kind == parquet.Int32 || kind == parquet.Int64) && (lt == nil || isIntLogical(lt))
		if name == "p" {
			want = "a floating-point number (DOUBLE or FLOAT)"
			ok = (kind == parquet.Double || kind == parquet.Float) && (lt == nil || lt.Value == nil)
		} else if ok {
			unsigned[i] = unsignedBits(kind, lt, typ.ConvertedType())
		}
		if !ok {
			return unsigned, fmt.Errorf("column %q has type %s, want %s (in DuckDB, cast it: %s::%s)",
				name, typ, want, name, map[bool]string{true: "DOUBLE", false: "BIGINT"}[name == "p"])
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

// checkTablesLayout checks what parquet-go would otherwise trust before it allocates:
// the declared row counts against MaxTablesFileCells, every column chunk against the
// file's bounds, and every page header (the sizes and value counts it declares)
// against its chunk, maxTablesPageBytes and MaxTablesFileCells. A file that passes
// can make parquet-go allocate at most about maxTablesPageBytes and
// MaxTablesFileCells values per page.
func checkTablesLayout(data []byte, md *format.FileMetaData) error {
	bad := func(msg string, args ...any) error {
		return fmt.Errorf("not a readable tables Parquet file: "+msg, args...)
	}
	if md.NumRows < 0 {
		return bad("the footer declares %d rows", md.NumRows)
	}
	if md.NumRows > maxTablesCells {
		return fmt.Errorf("the file declares %d rows, more than the %d a tables file may hold (one row per cell)", md.NumRows, maxTablesCells)
	}
	size := int64(len(data))
	var rows int64
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
			if m.NumValues < 0 || m.NumValues > maxTablesCells {
				return bad("row group %d, column %s declares %d values", g, name, m.NumValues)
			}
			if err := checkTablesPages(data[start:start+m.TotalCompressedSize], start, m.Codec); err != nil {
				return bad("row group %d, column %s: %v", g, name, err)
			}
		}
	}
	if rows != md.NumRows {
		return bad("the row groups hold %d rows but the footer declares %d", rows, md.NumRows)
	}
	return nil
}

// checkTablesPages walks the page headers of one column chunk, which starts at byte
// offset of the file.
func checkTablesPages(chunk []byte, offset int64, codec format.CompressionCodec) error {
	var values int64
	for pos := 0; pos < len(chunk); {
		var h format.PageHeader
		r := new(thrift.CompactProtocol).NewReaderFromBytes(chunk[pos:])
		if err := thrift.NewDecoder(r).Decode(&h); err != nil {
			return fmt.Errorf("page header at byte %d: %v", offset+int64(pos), err)
		}
		at := offset + int64(pos)
		pos += r.BytesRead()
		switch {
		case h.CompressedPageSize < 0 || int(h.CompressedPageSize) > len(chunk)-pos:
			return fmt.Errorf("page at byte %d declares %d bytes, beyond its column chunk", at, h.CompressedPageSize)
		case h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxTablesPageBytes:
			return fmt.Errorf("page at byte %d declares %d uncompressed bytes, more than the %d allowed", at, h.UncompressedPageSize, maxTablesPageBytes)
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
		if n < 0 || int64(n) > maxTablesCells || values > maxTablesCells {
			return fmt.Errorf("page at byte %d declares %d values", at, n)
		}
		body, limit := chunk[pos:pos+int(h.CompressedPageSize)], int64(h.UncompressedPageSize)
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
			if err := checkPageBody(codec, body, limit); err != nil {
				return fmt.Errorf("page at byte %d: %v", at, err)
			}
		}
		pos += int(h.CompressedPageSize)
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
