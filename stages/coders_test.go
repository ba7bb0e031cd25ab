package stages

import (
	"fmt"
	"testing"

	"github.com/jemcheck/jemcheck/internal/allocs"
	"github.com/jemcheck/jemcheck/internal/wire/wiretest"
	"github.com/jemcheck/jemcheck/schemas"
)

// TestElementCoders: every element type the stages encode with package wire decodes to
// the value it encoded, on random values of every field.
func TestElementCoders(t *testing.T) {
	t.Run("Block", func(t *testing.T) { wiretest.RoundTrip(t, blockWire, 50) })
	t.Run("TrainedBlock", func(t *testing.T) { wiretest.RoundTrip(t, trainedBlockWire, 50) })
	t.Run("ResultBlock", func(t *testing.T) { wiretest.RoundTrip(t, resultBlockWire, 50) })
	t.Run("LearnedBlock", func(t *testing.T) { wiretest.RoundTrip(t, learnedBlockWire, 50) })
	t.Run("PointAcc", func(t *testing.T) { wiretest.RoundTrip(t, pointAccWire, 50) })
}

// TestElementCoderAllocs: the element encoding's per-row allocations, a ceiling that a
// coder reflecting per field (Beam's row coder: 2 a row) or boxing values would break.
// Encoding allocates its buffer once a block (0 a row); decoding allocates each row's
// strings (8 non-empty in these rows; ceiling 8 × 1.25 + 2 = 12).
func TestElementCoderAllocs(t *testing.T) {
	block := func(n int) ResultBlock {
		b := ResultBlock{PointID: 1, First: 0}
		for i := range n {
			b.Rows = append(b.Rows, schemas.ResultRow{RunID: fmt.Sprintf("p0-t%d-jem", i), TableID: int64(i), Method: "jem",
				Encoding: "scalar", Generator: "uniform", Model: "linear", Task: "table", KLJoint: float64(i) / 7,
				MethodOptions: `{"sgld_lr":1}`, MethodStats: `{"log_z":1}`})
		}
		return b
	}
	blocks := map[int]ResultBlock{64: block(64), 256: block(256)}
	encoded := map[int][]byte{64: encodeResultBlock(blocks[64]), 256: encodeResultBlock(blocks[256])}
	enc := allocs.PerUnit(5, 64, 256, func(n int) { encodeResultBlock(blocks[n]) })
	dec := allocs.PerUnit(5, 64, 256, func(n int) {
		if _, err := decodeResultBlock(encoded[n]); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations a result row: encode %.2f, decode %.2f", enc, dec)
	if enc > 0.1 {
		t.Errorf("encoding a result row allocates %.2f times, over its ceiling 0", enc)
	}
	if dec > 12 {
		t.Errorf("decoding a result row allocates %.2f times, over its ceiling 12", dec)
	}
}
