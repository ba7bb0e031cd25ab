package schemas

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// checkPageBody decompresses one page's compressed bytes with an output bound of the
// page's declared uncompressed size, before parquet-go does it without one: its LZ4
// decoder doubles its buffer forever on corrupt input, snappy allocates the length a
// block claims (up to 4 GiB), and zstd, gzip and brotli stream until the input ends
// (decompression bombs). A page whose bytes do not decompress into at most limit bytes
// is refused.
func checkPageBody(codec format.CompressionCodec, body []byte, limit int64) error {
	var c bodyChecker
	defer c.close()
	return c.check(codec, body, limit)
}

// bodyChecker is checkPageBody for the pages of a file, one after another: it keeps
// its zstd decoder and its output buffer from page to page, so checking a file of
// many pages allocates about one page's worth, not one per page.
type bodyChecker struct {
	zstd      *zstd.Decoder
	zstdBound uint64 // the zstd decoder's memory bound: see check
	in, out   []byte // a page's compressed bytes (see body); snappy and LZ4 output
}

func (c *bodyChecker) close() {
	if c.zstd != nil {
		c.zstd.Close()
	}
}

// body is a buffer of n bytes for a page's compressed bytes, reused from page to page.
func (c *bodyChecker) body(n int32) []byte { return grow(&c.in, int64(n)) }

// grow is *b, made at least n bytes long.
func grow(b *[]byte, n int64) []byte {
	if int64(cap(*b)) < n {
		*b = make([]byte, n)
	}
	return (*b)[:n]
}

// check is checkPageBody.
func (c *bodyChecker) check(codec format.CompressionCodec, body []byte, limit int64) error {
	var r io.Reader
	switch codec {
	case format.Uncompressed:
		return nil
	case format.Snappy:
		n, err := snappy.DecodedLen(body)
		if err != nil {
			return fmt.Errorf("corrupt snappy data: %v", err)
		}
		if int64(n) > limit {
			return fmt.Errorf("snappy data decompresses to %d bytes, more than the %d declared", n, limit)
		}
		if _, err := snappy.Decode(grow(&c.out, int64(n)), body); err != nil {
			return fmt.Errorf("corrupt snappy data: %v", err)
		}
		return nil
	case format.Lz4Raw:
		if _, err := lz4.UncompressBlock(body, grow(&c.out, limit)); err != nil {
			return fmt.Errorf("corrupt LZ4 data, or more than the %d bytes declared: %v", limit, err)
		}
		return nil
	case format.Zstd:
		// The decoder's window is bounded by the page's declared size (at least 1 MiB),
		// rounded up to a power of two so that pages of similar sizes share a decoder.
		bound := uint64(1) << bits.Len64(uint64(max(limit, 1<<20))-1)
		if c.zstd == nil || c.zstdBound != bound {
			c.close()
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(bound))
			if err != nil {
				return fmt.Errorf("zstd decoder: %v", err)
			}
			c.zstd, c.zstdBound = d, bound
		}
		if err := c.zstd.Reset(bytes.NewReader(body)); err != nil {
			return fmt.Errorf("corrupt zstd data: %v", err)
		}
		r = c.zstd
	case format.Gzip:
		g, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("corrupt gzip data: %v", err)
		}
		defer g.Close()
		r = g
	case format.Brotli:
		r = brotli.NewReader(bytes.NewReader(body))
	default:
		return fmt.Errorf("compression codec %v is not supported (use none, snappy, gzip, brotli, zstd or lz4_raw)", codec)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(r, limit+1))
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("corrupt %v data: %v", codec, err)
	}
	if n > limit {
		return fmt.Errorf("%v data decompresses to more than the %d bytes declared", codec, limit)
	}
	return nil
}
