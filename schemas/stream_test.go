package schemas

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"
)

// A file written a row at a time through a Chunker is byte for byte the file one
// WriteParquet of all its rows gives: across page flushes, a row group boundary and
// odd lengths.
func TestChunkerSameBytes(t *testing.T) {
	ctx := context.Background()
	b := memBucket(t)
	rows := func(n int) []LearnedRow {
		out := make([]LearnedRow, n)
		for i := range out {
			out[i] = LearnedRow{RunID: fmt.Sprintf("p0000-t%08d-pcd", i/5000), TableID: int64(i / 5000), Method: "pcd",
				X: int64(i / 2 % 5000), Y: int64(i % 2), Logit: math.Sin(float64(i)), Q: math.Cos(float64(i)) / 1e6}
		}
		return out
	}
	sizes := []int{0, 1, 63, 64, 65, StreamChunk - 1, StreamChunk, StreamChunk + 1, 3*StreamChunk + 17, 200_003}
	if !testing.Short() {
		sizes = append(sizes, rowsPerGroup+StreamChunk+5) // two row groups
	}
	for _, n := range sizes {
		rs := rows(n)
		if err := WriteParquet(ctx, b, "whole.parquet", rs); err != nil {
			t.Fatal(err)
		}
		chunks := 0
		err := WriteParquetStream(ctx, b, "chunked.parquet", func(write func([]LearnedRow) error) error {
			c := NewChunker(func(r []LearnedRow) error {
				if len(r) > StreamChunk {
					t.Errorf("n=%d: a chunk of %d rows", n, len(r))
				}
				chunks++
				return write(r)
			})
			for _, r := range rs {
				if err := c.Add(r); err != nil {
					return err
				}
			}
			return c.Flush()
		})
		if err != nil {
			t.Fatal(err)
		}
		whole, _ := b.ReadAll(ctx, "whole.parquet")
		chunked, _ := b.ReadAll(ctx, "chunked.parquet")
		if !bytes.Equal(whole, chunked) {
			t.Errorf("n=%d: chunked file (%d bytes) differs from the whole one (%d bytes)", n, len(chunked), len(whole))
		}
		if want := (n + StreamChunk - 1) / StreamChunk; chunks != want {
			t.Errorf("n=%d: %d chunks, want %d", n, chunks, want)
		}
	}
}

// A failing write stops the Chunker and its error comes back.
func TestChunkerError(t *testing.T) {
	boom := fmt.Errorf("boom")
	c := NewChunker(func([]int) error { return boom })
	var err error
	for i := 0; i < StreamChunk && err == nil; i++ {
		err = c.Add(i)
	}
	if err != boom {
		t.Fatalf("Add: %v, want boom", err)
	}
	if err := c.Add(1); err != nil {
		t.Fatalf("Add after a chunk: %v", err)
	}
	if err := c.Flush(); err != boom {
		t.Fatalf("Flush: %v, want boom", err)
	}
}
