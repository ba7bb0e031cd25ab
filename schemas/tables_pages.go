package schemas

import (
	"bytes"
	"errors"
	"fmt"
	"io"

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
		if _, err := snappy.Decode(nil, body); err != nil {
			return fmt.Errorf("corrupt snappy data: %v", err)
		}
		return nil
	case format.Lz4Raw:
		if _, err := lz4.UncompressBlock(body, make([]byte, limit)); err != nil {
			return fmt.Errorf("corrupt LZ4 data, or more than the %d bytes declared: %v", limit, err)
		}
		return nil
	case format.Zstd:
		d, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(max(limit, 1<<20))))
		if err != nil {
			return fmt.Errorf("corrupt zstd data: %v", err)
		}
		defer d.Close()
		r = d
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
