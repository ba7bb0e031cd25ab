package schemas

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"math/big"
	"math/bits"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/jemcheck/jemcheck/models/prob"
	"github.com/jemcheck/jemcheck/storage"
)

// Limits of a tables file (--tables_from), enforced while it is read so that a hostile
// or absurd file fails fast, in bounded memory, with a message that names the limit.
const (
	// MaxTablesFileCells bounds the rows of a tables file, one row per cell: all its
	// tables' X·K cells together. Validation holds 40 bytes a cell that passed (and
	// 11-22 more when the cells do not come sorted); reading a valid file at the limit
	// peaks at about 0.9 GB of memory (1 GB unsorted) and takes seconds. A row that
	// fails is refused when it is read: an invalid file costs the rows before it.
	MaxTablesFileCells = 10_000_000
	// MaxTablesFileBytes bounds the size of a tables file, which is read whole into
	// memory: 1 GiB, ample for MaxTablesFileCells rows of CSV.
	MaxTablesFileBytes = 1 << 30
)

// The limits in force: variables only so that tests can lower them.
var (
	maxTablesCells int64 = MaxTablesFileCells
	maxTablesBytes int64 = MaxTablesFileBytes
)

// userFile describes one kind of user input file (a tables file, a tasks file): its
// columns and limits, and the words its messages use. The readers of every kind share
// the code below and in tables_parquet.go (format by extension, bounded reading, the
// CSV header and values, the Parquet checks), so they fail alike.
type userFile struct {
	kind     string   // names the file in messages: "tables" gives "tables file t.csv: ..."
	row      string   // what one row holds, in the row limit's message: "cell"
	columns  []string // the columns, the integer ones first
	ints     int      // how many of columns are integers (INT32/INT64); the rest are floating point
	maxRows  *int64   // the limits in force
	maxBytes *int64
}

// maxUserColumns bounds len(userFile.columns): scratch arrays are this long.
const maxUserColumns = 8

// tablesFile is the tables file of --tables_from: one row per cell, in TableRow's order.
var tablesFile = userFile{kind: "tables", row: "cell", columns: tableColumns, ints: 3,
	maxRows: &maxTablesCells, maxBytes: &maxTablesBytes}

// want lists the columns for messages: "table_id, x, y, p".
func (f userFile) want() string { return strings.Join(f.columns, ", ") }

// tooManyRows is the error for a file with more than its row limit; unit and at say
// where the first row over the limit is ("line 10000002", "row 10000001").
func (f userFile) tooManyRows(unit string, at int64) error {
	return fmt.Errorf("%s %d: more than %d rows: a %s file holds at most %d %ss (one row per %s)",
		unit, at, *f.maxRows, f.kind, *f.maxRows, f.row, f.row)
}

// open opens the file at loc (a path or URL) for bounded reading after checking its
// extension: storage.OpenObject refuses anything but a regular file on a local bucket
// and a file over the byte limit, for the object loc names whatever its form (a
// file:// URL with a query too). It returns the file's key, which names its format;
// errors name the file. The caller closes the object.
func (f userFile) open(ctx context.Context, loc string) (key string, o *storage.Object, err error) {
	dir, key, err := storage.SplitObject(loc)
	if err != nil {
		return "", nil, fmt.Errorf("%s file %q: %w", f.kind, loc, err)
	}
	if key == "" {
		return "", nil, fmt.Errorf("%s file %q: no file name", f.kind, loc)
	}
	if _, err := fileFormat(key); err != nil {
		return "", nil, fmt.Errorf("%s file %s: %w", f.kind, loc, err)
	}
	if local, ok := storage.LocalDir(dir); ok {
		if err := checkRegular(filepath.Join(local, key)); err != nil {
			return "", nil, fmt.Errorf("%s file %s: %w", f.kind, loc, err)
		}
	}
	o, err = storage.OpenObject(ctx, loc, *f.maxBytes)
	var tooLarge *storage.TooLargeError
	var notRegular *storage.NotRegularError
	switch {
	case err == nil:
		return key, o, nil
	case storage.IsNotFound(err):
		return "", nil, fmt.Errorf("%s file %s does not exist", f.kind, loc)
	case errors.As(err, &tooLarge):
		return "", nil, fmt.Errorf("%s file %s: %w", f.kind, loc, f.tooBig(tooLarge.Size))
	case errors.As(err, &notRegular):
		return "", nil, fmt.Errorf("%s file %s: %s", f.kind, loc, strings.TrimPrefix(notRegular.Error(), notRegular.Key+" "))
	}
	return "", nil, fmt.Errorf("%s file %s: %w", f.kind, loc, err)
}

// tooBig is the error for a file of size bytes, over the byte limit.
func (f userFile) tooBig(size int64) error {
	return fmt.Errorf("the file has %d bytes, more than the %d a %s file may have", size, *f.maxBytes, f.kind)
}

// userSource is an opened user file: a stream (CSV) and random access (Parquet).
type userSource struct {
	r    io.Reader
	ra   io.ReaderAt
	size int64
}

func bytesSource(data []byte) userSource {
	br := bytes.NewReader(data)
	return userSource{r: br, ra: bytes.NewReader(data), size: int64(len(data))}
}

func objectSource(o *storage.Object) userSource { return userSource{r: o, ra: o, size: o.Size} }

// checkRegular refuses a local file that is not a regular file (after symbolic links)
// before it is opened: a directory, or a device, FIFO or socket, which may never end
// (/dev/zero) or block the open until a writer comes (a FIFO). A file that does not
// exist passes, for the reader's own message.
func checkRegular(name string) error {
	fi, err := os.Stat(name)
	if err != nil {
		return nil
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return errors.New("is a directory, not a file")
	case m&os.ModeNamedPipe != 0:
		return errors.New("is a named pipe (FIFO), not a regular file")
	case m&os.ModeDevice != 0:
		return errors.New("is a device, not a regular file")
	default:
		return fmt.Errorf("is not a regular file (mode %v)", m.Type())
	}
}

// maxCSVLine bounds one line of a user CSV file: its rows are a few numbers, so a
// longer line is not such a file (a file of one endless line is refused at once,
// without buffering it).
const maxCSVLine = 1 << 20

// errLongLine marks a CSV line over maxCSVLine.
var errLongLine = errors.New("line too long")

// lineLimiter passes a stream through, failing once a line exceeds max bytes.
type lineLimiter struct {
	r     io.Reader
	max   int
	cur   int   // bytes of the current line so far
	lines int64 // complete lines so far
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.cur += len(b)
			break
		}
		if l.cur+i > l.max {
			l.cur += i
			break
		}
		l.cur, l.lines, b = 0, l.lines+1, b[i+1:]
	}
	if l.cur > l.max {
		return 0, errLongLine
	}
	return n, err
}

// csvReader reads a user CSV stream: a leading BOM skipped (spreadsheet exports), lines
// bounded by maxCSVLine. Its errors pass through csvError.
func csvReader(r io.Reader) (*csv.Reader, *lineLimiter) {
	br := bufio.NewReaderSize(r, 1<<16)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		br.Discard(3)
	}
	ll := &lineLimiter{r: br, max: maxCSVLine}
	cr := csv.NewReader(ll)
	cr.ReuseRecord = true
	return cr, ll
}

// csvError describes a read error of csvReader.
func csvError(err error, ll *lineLimiter) error {
	var tl *storage.TooLargeError
	switch {
	case errors.Is(err, errLongLine):
		return fmt.Errorf("line %d is longer than %d bytes: not a CSV file of rows of numbers", ll.lines+1, maxCSVLine)
	case errors.As(err, &tl):
		return fmt.Errorf("the file grew to more than %d bytes while it was read", tl.Limit)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("malformed CSV: %w", err)
	}
	return fmt.Errorf("reading: %w", err)
}

// fileFormat is "csv" or "parquet", from the extension of a file's name.
func fileFormat(name string) (string, error) {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".csv":
		return "csv", nil
	case ".parquet":
		return "parquet", nil
	default:
		return "", fmt.Errorf("unknown extension %q, want .csv or .parquet", ext)
	}
}

// userRow is a parsed row of a user file, validated as it is read: on its own
// (check), then against the rows before it (a repeated key is a duplicate).
type userRow interface {
	key() rowKey                              // what must be unique: (table, x, y), (task, y, component)
	pos() int64                               // its CSV line or Parquet row
	check(unit string) error                  // its values on their own
	duplicate(unit string, first int64) error // the error for a repeat of the row at first
}

// rowKey is the unique key of a userRow.
type rowKey [3]int64

func (a rowKey) compare(b rowKey) int {
	return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
}

// rowCollector keeps the rows of a user file that pass their checks, refusing the
// first bad row as soon as it is read, so that a file of invalid rows costs a batch
// of memory whatever it declares, and a valid one its rows. A key is unique while
// the keys ascend (the order TableRows and TaskRows write, and any sorted file): then
// only the last key is held. At the first key out of order the rows so far go into a
// hash set of their indices (keySet), for the rest of the file: 11 to 22 bytes a
// row kept.
type rowCollector[R userRow] struct {
	unit   string // "line" or "row"
	rows   []R
	expect int64 // the rows the file declares (Parquet), else 0: see keep
	last   rowKey
	set    *keySet // nil while the keys ascend
}

// add checks r and keeps it.
func (c *rowCollector[R]) add(r R) error {
	if err := r.check(c.unit); err != nil {
		return err
	}
	k := r.key()
	switch {
	case c.set != nil:
	case len(c.rows) == 0 || k.compare(c.last) > 0:
		c.last = k
		c.keep(r)
		return nil
	case k == c.last:
		return r.duplicate(c.unit, c.rows[len(c.rows)-1].pos())
	default: // out of order: from now on, a set of the keys, all distinct so far
		c.set = newKeySet(len(c.rows)+1, func(i int32) rowKey { return c.rows[i].key() })
		for i := range c.rows {
			c.set.insert(c.rows[i].key(), int32(i))
		}
	}
	if i, dup := c.set.insert(k, int32(len(c.rows))); dup {
		return r.duplicate(c.unit, c.rows[i].pos())
	}
	c.keep(r)
	return nil
}

// keySet is a set of distinct row keys, held as the rows' indices (a user file holds
// at most 10^7 rows: an index fits 32 bits) in an open-addressing table, at most 3/4
// full. A slot holds 32 bits of its key's hash too: they choose the slot (the table
// has at most 2^32 of them), and a probe reads a row only where they match. The hash
// is seeded at random, as Go's maps are, so that no file can make its keys collide.
// 11 to 22 bytes a key.
type keySet struct {
	seed  maphash.Seed
	slots []uint64 // hash<<32 | (1 + a row's index); 0 for an empty slot
	n     int
	key   func(i int32) rowKey // the key of the i-th row
}

// newKeySet makes a keySet for about n keys of the rows that key gives.
func newKeySet(n int, key func(i int32) rowKey) *keySet {
	return &keySet{seed: maphash.MakeSeed(), slots: make([]uint64, max(16, 1<<bits.Len(uint(n+n/3)))), key: key}
}

// hash is 32 bits of the hash of k.
func (s *keySet) hash(k rowKey) uint64 {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(k[0]))
	binary.LittleEndian.PutUint64(b[8:], uint64(k[1]))
	binary.LittleEndian.PutUint64(b[16:], uint64(k[2]))
	return maphash.Bytes(s.seed, b[:]) >> 32
}

// insert adds the key k of row i, unless the set holds it already: then it returns
// the index of the row that has it, and true.
func (s *keySet) insert(k rowKey, i int32) (int32, bool) {
	if 4*(s.n+1) > 3*len(s.slots) {
		old := s.slots
		s.slots = make([]uint64, 2*len(old))
		for _, v := range old {
			if v != 0 {
				s.place(v)
			}
		}
	}
	h := s.hash(k)
	mask := uint64(len(s.slots) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		v := s.slots[j]
		if v == 0 {
			s.slots[j] = h<<32 | uint64(i+1)
			s.n++
			return 0, false
		}
		if v>>32 == h && s.key(int32(v)-1) == k {
			return int32(v) - 1, true
		}
	}
}

// place puts the slot value v of a key not in the set in its slot (rehashing).
func (s *keySet) place(v uint64) {
	mask := uint64(len(s.slots) - 1)
	j := v >> 32 & mask
	for s.slots[j] != 0 {
		j = (j + 1) & mask
	}
	s.slots[j] = v
}

// keep appends r to c.rows. The rows a file declares are not reserved up front: a
// file that declares millions and fails at its second row would cost their memory.
// Instead the capacity doubles as rows pass, up to the declared count, so a valid
// Parquet file ends in a slice of exactly its rows and an invalid one never holds
// more than twice the rows that passed.
func (c *rowCollector[R]) keep(r R) {
	if n := int64(len(c.rows)); n == int64(cap(c.rows)) && n < c.expect {
		c.rows = slices.Grow(c.rows, int(min(max(2*n, readBatch), c.expect)-n))
	}
	c.rows = append(c.rows, r)
}

// parseUserRows parses the bytes of a file of kind f, CSV or Parquet by the extension
// of name, into rows made by conv (see parseCSVRows and parseParquetRows), each
// checked (userRow) as it is read: the first bad row, in file order, is the error.
// unit is what the file's errors call a row's position: "line" (CSV, from 1, the
// header included) or "row" (Parquet, from 1).
func parseUserRows[R userRow](f userFile, name string, src userSource, conv func(ints []int64, floats []float64, at int64) R) (rows []R, unit string, err error) {
	format, err := fileFormat(name)
	if err != nil {
		return nil, "", err
	}
	c := rowCollector[R]{unit: "line"}
	add := func(ints []int64, floats []float64, at int64) error { return c.add(conv(ints, floats, at)) }
	if format == "csv" {
		err = parseCSVRows(f, src.r, add)
	} else {
		c.unit = "row"
		err = parseParquetRows(f, src.ra, src.size, func(n int64) { c.expect = n }, add)
	}
	if err != nil {
		return nil, "", err
	}
	return c.rows, c.unit, nil
}

// parseCSVRows reads a CSV file of f's columns: a header row naming each column once,
// in any order (case and surrounding spaces ignored; a leading BOM is skipped), then
// at most the row limit of rows. It hands each row to add, with its values in
// f.columns' order (integers, then floats: scratch slices, reused) and its line,
// stopping at add's first error. A value that is not a number is refused here; an
// out-of-range float comes as ±Inf or 0, for add to judge.
func parseCSVRows(f userFile, src io.Reader, add func(ints []int64, floats []float64, at int64) error) error {
	r, ll := csvReader(src)
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("empty file: want a header %s and rows", strings.Join(f.columns, ","))
	}
	if err != nil {
		return csvError(err, ll)
	}
	col := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		if !slices.Contains(f.columns, name) {
			return fmt.Errorf("line 1: unexpected column %q: want exactly %s", h, f.want())
		}
		if _, dup := col[name]; dup {
			return fmt.Errorf("line 1: column %q appears twice", name)
		}
		col[name] = i
	}
	for _, name := range f.columns {
		if _, ok := col[name]; !ok {
			return fmt.Errorf("line 1: missing column %q: want exactly %s", name, f.want())
		}
	}
	ints := make([]int64, f.ints)
	floats := make([]float64, len(f.columns)-f.ints)
	var n int64
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return csvError(err, ll)
		}
		line, _ := r.FieldPos(0)
		if n >= *f.maxRows {
			return f.tooManyRows("line", int64(line))
		}
		n++
		for j, name := range f.columns {
			s := strings.TrimSpace(rec[col[name]])
			if j >= f.ints {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: ±Inf or 0, judged by add
					return fmt.Errorf("line %d: %s %q is not a number", line, name, s)
				}
				floats[j-f.ints] = v
				continue
			}
			v, err := strconv.ParseInt(s, 10, 64)
			if errors.Is(err, strconv.ErrRange) {
				return fmt.Errorf("line %d: %s %s is out of range: it must be in [%d, %d] (a signed 64-bit integer)",
					line, name, s, int64(math.MinInt64), int64(math.MaxInt64))
			}
			if err != nil {
				return fmt.Errorf("line %d: %s %q is not an integer", line, name, s)
			}
			ints[j] = v
		}
		if err := add(ints, floats, int64(line)); err != nil {
			return err
		}
	}
}

// tableColumns are the columns of a user tables file, in TableRow's order.
var tableColumns = []string{"table_id", "x", "y", "p"}

// TableRows flattens tables into TableRow cells: tables in the given order, each
// table's cells row-major (x, then y).
func TableRows(ts []prob.Table) []TableRow {
	n := 0
	for _, t := range ts {
		n += len(t.P)
	}
	rows := make([]TableRow, 0, n)
	for _, t := range ts {
		for i, p := range t.P {
			rows = append(rows, TableRow{TableID: t.ID, X: int64(i / t.K), Y: int64(i % t.K), P: p})
		}
	}
	return rows
}

// ReadTables reads user-supplied true tables from loc: a path or URL of a .csv or
// .parquet file (chosen by extension) with exactly the columns table_id, x, y, p (CSV:
// a header row, in any column order). Every table must hold each of its X·K cells
// exactly once, where X = max x + 1 and K = max y + 1, all tables must share one
// shape, and each table must be a distribution (see prob.NewTable). The tables come
// back sorted by id. Errors name the file and the problem (with the CSV line or the
// Parquet row).
func ReadTables(ctx context.Context, loc string) ([]prob.Table, error) {
	key, o, err := tablesFile.open(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	ts, err := parseTables(key, objectSource(o))
	if err != nil {
		return nil, fmt.Errorf("tables file %s: %w", loc, err)
	}
	return ts, nil
}

// ParseTables parses and validates the bytes of a tables file as ReadTables does; the
// extension of name (.csv or .parquet) chooses the format. It never panics, and it
// allocates in proportion to the rows it really reads, at most MaxTablesFileCells.
func ParseTables(name string, data []byte) ([]prob.Table, error) {
	return parseTables(name, bytesSource(data))
}

// parseTables parses the tables file src, streamed (CSV) or read at offsets (Parquet):
// never held whole.
func parseTables(name string, src userSource) ([]prob.Table, error) {
	cells, _, err := parseUserRows(tablesFile, name, src, newCell)
	if err != nil {
		return nil, err
	}
	return assembleTables(cells)
}

// cell is one parsed row with where it came from: its CSV line or Parquet row (from 1).
type cell struct {
	TableRow
	at int64
}

// newCell makes a cell of the values of a row of tablesFile.
func newCell(ints []int64, floats []float64, at int64) cell {
	return cell{TableRow: TableRow{TableID: ints[0], X: ints[1], Y: ints[2], P: floats[0]}, at: at}
}

// smallestNormal is the smallest normal float64, 2^-1022 ≈ 2.2e-308: a table's p is 0
// or at least this.
const smallestNormal = 0x1p-1022

func (c cell) key() rowKey { return rowKey{c.TableID, c.X, c.Y} }
func (c cell) pos() int64  { return c.at }

func (c cell) duplicate(unit string, first int64) error {
	return fmt.Errorf("%s %d: duplicate cell (table %d, x=%d, y=%d), first at %s %d",
		unit, c.at, c.TableID, c.X, c.Y, unit, first)
}

// check checks the indices and p of one cell on their own; unit names where it came
// from ("line" or "row").
func (c cell) check(unit string) error {
	switch {
	case c.X < 0 || c.Y < 0:
		return fmt.Errorf("%s %d: negative index x=%d, y=%d", unit, c.at, c.X, c.Y)
	case math.IsNaN(c.P):
		return fmt.Errorf("%s %d: p is NaN", unit, c.at)
	case math.IsInf(c.P, 0):
		return fmt.Errorf("%s %d: p is %v", unit, c.at, c.P)
	case c.P < 0:
		return fmt.Errorf("%s %d: p is negative (%g)", unit, c.at, c.P)
	case c.P > 0 && c.P < smallestNormal:
		// A subnormal p passes every other check, then makes the exact reference
		// KL -Inf (its add-½ term divides by p·N) and the run fails at the end.
		return fmt.Errorf("%s %d: p = %g is below 2.23e-308, the smallest normal float64, where jemcheck's exact "+
			"reference cannot be computed: give 0 for an impossible cell, or a probability of at least 2.23e-308", unit, c.at, c.P)
	}
	return nil
}

// assembleTables groups cells, each checked and none a duplicate (parseUserRows),
// into tables sorted by id. It works on the cells in place (sorting them), so it
// needs no memory beyond the tables it returns, whatever the indices.
func assembleTables(cells []cell) ([]prob.Table, error) {
	if len(cells) == 0 {
		return nil, errors.New("no tables: the file has no rows")
	}
	// Sorted by table and cell, a complete table is a run of its X·K cells in
	// row-major order.
	slices.SortFunc(cells, func(a, b cell) int { return a.key().compare(b.key()) })
	var tables []prob.Table
	var p []float64
	for len(cells) > 0 {
		id := cells[0].TableID
		n := 1
		for n < len(cells) && cells[n].TableID == id {
			n++
		}
		run := cells[:n]
		cells = cells[n:]
		var maxX, maxY int64
		for _, c := range run {
			maxX, maxY = max(maxX, c.X), max(maxY, c.Y)
		}
		x, k := maxX+1, maxY+1
		// n ≤ the number of rows, so an incomplete table is found before any
		// allocation of x·k cells, however large the indices.
		if x > math.MaxInt32 || k > math.MaxInt32 || int64(n) != x*k {
			return nil, fmt.Errorf("table %d is incomplete: has %d cells, want X·K = %d·%d = %s (X = max x + 1, K = max y + 1); %s",
				id, n, x, k, new(big.Int).Mul(big.NewInt(x), big.NewInt(k)), firstMissing(run, k))
		}
		if len(tables) > 0 && (int64(tables[0].X) != x || int64(tables[0].K) != k) {
			return nil, fmt.Errorf("table %d has shape X=%d, K=%d but table %d has X=%d, K=%d: all tables must share one shape",
				id, x, k, tables[0].ID, tables[0].X, tables[0].K)
		}
		p = p[:0]
		for _, c := range run { // complete and sorted: row-major order
			p = append(p, c.P)
		}
		t, err := prob.NewTable(id, int(x), int(k), p)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// firstMissing names the first absent cell, in row-major order, of an incomplete
// table: its distinct cells in that order, with k cells a row.
func firstMissing(run []cell, k int64) string {
	var i, j int64 // the next cell expected
	for _, c := range run {
		if c.X != i || c.Y != j {
			break
		}
		if j++; j == k {
			i, j = i+1, 0
		}
	}
	return fmt.Sprintf("missing (x=%d,y=%d)", i, j)
}
