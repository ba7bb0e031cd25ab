package stages

import (
	"testing"

	"github.com/jemcheck/jemcheck/internal/wire/wiretest"
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
