package cnn

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// onnxBytes is a minimal ONNX model, encoded field by field (onnx.proto's numbers):
// input x [1, in], the initializer W [dims...] of type dtype holding raw (or, where
// raw is nil, floats), one MatMul node y = x·W, output y.
func onnxBytes(in int64, dims []int64, raw []byte, floats []float32, extra func(graph []byte) []byte) []byte {
	msg := func(num protowire.Number, body []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), body)
	}
	str := func(num protowire.Number, s string) []byte { return msg(num, []byte(s)) }
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	valueInfo := func(name string, shape ...int64) []byte {
		var dimsB []byte
		for _, d := range shape {
			dimsB = append(dimsB, msg(1, varint(1, uint64(d)))...) // TensorShapeProto.dim{dim_value}
		}
		tensorType := cat(varint(1, 1), msg(2, dimsB)) // elem_type FLOAT, shape
		return cat(str(1, name), msg(2, msg(1, tensorType)))
	}
	var dimsB []byte
	for _, d := range dims {
		dimsB = protowire.AppendVarint(dimsB, uint64(d))
	}
	init := cat(msg(1, dimsB), varint(2, 1), str(8, "W")) // dims (packed), data_type FLOAT, name
	if raw != nil {
		init = append(init, msg(9, raw)...)
	}
	if floats != nil {
		var fb []byte
		for _, f := range floats {
			fb = binary.LittleEndian.AppendUint32(fb, math.Float32bits(f))
		}
		init = append(init, msg(4, fb)...)
	}
	node := cat(str(1, "x"), str(1, "W"), str(2, "y"), str(3, "mm"), str(4, "MatMul"))
	graph := cat(msg(1, node), str(2, "g"), msg(5, init), msg(11, valueInfo("x", 1, in)), msg(12, valueInfo("y", 1, 2)))
	if extra != nil {
		graph = extra(graph)
	}
	return cat(varint(1, 8), msg(8, varint(2, 13)), msg(7, graph)) // ir_version, opset_import{version}, graph
}

// TestONNXDeclaredSizes: what an ONNX file declares is checked before any tensor is
// made. A well-formed model loads; a 614-byte-sized file declaring a 10⁶×10⁶ initializer,
// an initializer whose data does not match its dimensions, a negative dimension, data
// in an external file, a ConstantOfShape asking for 10¹² values and an input example of
// 10¹⁸ values are each refused with a message naming what is wrong, without asking the
// memory for them.
func TestONNXDeclaredSizes(t *testing.T) {
	f4 := func(n int) []byte { return make([]byte, 4*n) }
	constOfShape := func(graph []byte) []byte {
		var shape []byte
		for _, d := range []int64{1_000_000, 1_000_000} {
			shape = protowire.AppendVarint(shape, uint64(d))
		}
		// Constant node "s" (INT64 [2] = {1e6, 1e6}) feeding ConstantOfShape.
		tensor := append(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), protowire.AppendVarint(nil, 2)),
			protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 7)...)
		tensor = append(tensor, protowire.AppendBytes(protowire.AppendTag(nil, 7, protowire.BytesType), shape)...)
		attr := append(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("value")),
			protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), tensor)...) // name, t
		c := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte("s"))
		c = append(c, protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), []byte("Constant"))...)
		c = append(c, protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), attr)...)
		cs := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("s"))
		cs = append(cs, protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte("big"))...)
		cs = append(cs, protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), []byte("ConstantOfShape"))...)
		graph = append(graph, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), c)...)
		return append(graph, protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), cs)...)
	}
	external := func(graph []byte) []byte {
		// A second initializer E [2] with data_location EXTERNAL (14 = 1).
		var e []byte
		e = protowire.AppendBytes(protowire.AppendTag(e, 1, protowire.BytesType), protowire.AppendVarint(nil, 2))
		e = protowire.AppendVarint(protowire.AppendTag(e, 2, protowire.VarintType), 1)
		e = protowire.AppendBytes(protowire.AppendTag(e, 8, protowire.BytesType), []byte("E"))
		e = protowire.AppendVarint(protowire.AppendTag(e, 14, protowire.VarintType), 1)
		return append(graph, protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), e)...)
	}
	tests := []struct {
		name string
		data []byte
		want string // "" loads
	}{
		{"well formed, raw data", onnxBytes(3, []int64{3, 2}, f4(6), nil, nil), ""},
		{"well formed, float data", onnxBytes(3, []int64{3, 2}, nil, make([]float32, 6), nil), ""},
		{"10^6 x 10^6 initializer", onnxBytes(3, []int64{1_000_000, 1_000_000}, f4(6), nil, nil), `tensor "W" declares dimensions [1000000 1000000]: over 268435456 values`},
		{"data shorter than declared", onnxBytes(3, []int64{3, 2}, f4(5), nil, nil), `tensor "W" declares dimensions [3 2] (6 values) but holds 5`},
		{"no data", onnxBytes(3, []int64{3, 2}, nil, nil, nil), "(6 values) but holds 0"},
		{"negative dimension", onnxBytes(3, []int64{3, -2}, f4(6), nil, nil), "a negative dimension -2"},
		{"external data", onnxBytes(3, []int64{3, 2}, f4(6), nil, external), `tensor "E" is stored in external data`},
		{"ConstantOfShape 10^12", onnxBytes(3, []int64{3, 2}, f4(6), nil, constOfShape), "(ConstantOfShape) asks for a shape [1000000 1000000]"},
		{"input example of 10^18 values", onnxBytes(1_000_000_000_000_000_000, []int64{3, 2}, f4(6), nil, nil), `input "x" declares examples of [1000000000000000000] values`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseONNX(tt.data, "model.onnx")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ParseONNX: %v", err)
				}
				if m.PerExample != 3 {
					t.Errorf("PerExample %d, want 3", m.PerExample)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "model.onnx") {
				t.Fatalf("ParseONNX = %v, want an error naming model.onnx and %q", err, tt.want)
			}
		})
	}
	if len(tests[2].data) > 1000 {
		t.Errorf("the 10^6 x 10^6 model is %d bytes: the attack is a small file", len(tests[2].data))
	}
}
