package schemas

// StreamChunk is the number of rows a Chunker hands on at a time: a multiple of 64, so
// a file written in chunks is byte for byte the file one Write of all its rows gives
// (parquet-go cuts every Write into pieces of 64 rows, and flushes a page only between
// pieces: chunks of a multiple of 64 rows cut them at the same rows), and a few MB of
// rows at most.
const StreamChunk = 1 << 14

// Chunker gathers rows one at a time and hands them to write (WriteParquetStream's
// write) StreamChunk at a time, so the rows of a file never sit in memory whole:
//
//	err := WriteParquetStream(ctx, b, key, func(write func([]T) error) error {
//		c := NewChunker(write)
//		for … {
//			if err := c.Add(row); err != nil {
//				return err
//			}
//		}
//		return c.Flush()
//	})
//
// The file's bytes are those of one Write of every row (see StreamChunk), as long as
// every row of a Write the caller would have made goes through one Chunker.
type Chunker[T any] struct {
	write func([]T) error
	rows  []T
}

// NewChunker returns a Chunker that hands its rows to write.
func NewChunker[T any](write func([]T) error) *Chunker[T] {
	return &Chunker[T]{write: write}
}

// Add appends a row, handing on a full chunk.
func (c *Chunker[T]) Add(row T) error {
	if c.rows == nil {
		c.rows = make([]T, 0, StreamChunk)
	}
	c.rows = append(c.rows, row)
	if len(c.rows) == StreamChunk {
		return c.Flush()
	}
	return nil
}

// Flush hands on the rows gathered since the last chunk, if any.
func (c *Chunker[T]) Flush() error {
	if len(c.rows) == 0 {
		return nil
	}
	err := c.write(c.rows)
	c.rows = c.rows[:0]
	return err
}
