package stages

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/internal/wire"
)

// The blocks and the aggregate's accumulator travel in package wire's encoding, compiled
// once per type, instead of Beam's row coder, which reflects on every field of every row
// (and which a runner also runs on the first elements of every bundle, to sample
// PCollection sizes). Each type has its own named functions: a runner that loads the
// pipeline in another process finds a coder's functions by their symbol names.
var (
	blockWire        = wire.For[Block]()
	trainedBlockWire = wire.For[TrainedBlock]()
	resultBlockWire  = wire.For[ResultBlock]()
	learnedBlockWire = wire.For[LearnedBlock]()
	pointAccWire     = wire.For[PointAcc]()
)

func init() {
	beam.RegisterCoder(reflect.TypeFor[Block](), encodeBlock, decodeBlock)
	beam.RegisterCoder(reflect.TypeFor[TrainedBlock](), encodeTrainedBlock, decodeTrainedBlock)
	beam.RegisterCoder(reflect.TypeFor[ResultBlock](), encodeResultBlock, decodeResultBlock)
	beam.RegisterCoder(reflect.TypeFor[LearnedBlock](), encodeLearnedBlock, decodeLearnedBlock)
	beam.RegisterCoder(reflect.TypeFor[PointAcc](), encodePointAcc, decodePointAcc)
}

func encodeBlock(v Block) []byte                        { return blockWire.Encode(v) }
func decodeBlock(b []byte) (Block, error)               { return blockWire.Decode(b) }
func encodeTrainedBlock(v TrainedBlock) []byte          { return trainedBlockWire.Encode(v) }
func decodeTrainedBlock(b []byte) (TrainedBlock, error) { return trainedBlockWire.Decode(b) }
func encodeResultBlock(v ResultBlock) []byte            { return resultBlockWire.Encode(v) }
func decodeResultBlock(b []byte) (ResultBlock, error)   { return resultBlockWire.Decode(b) }
func encodeLearnedBlock(v LearnedBlock) []byte          { return learnedBlockWire.Encode(v) }
func decodeLearnedBlock(b []byte) (LearnedBlock, error) { return learnedBlockWire.Decode(b) }
func encodePointAcc(v PointAcc) []byte                  { return pointAccWire.Encode(v) }
func decodePointAcc(b []byte) (PointAcc, error)         { return pointAccWire.Decode(b) }
