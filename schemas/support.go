package schemas

// The rows of a point's support file, points/point-NNNN.parquet (pipelines/export):
// the evaluation points of its tasks, on which a model outside jemcheck gives its
// logits to pipelines/evaluate.

// SupportRow is one value x of a table's x (tables: 0..X−1).
type SupportRow struct {
	X int64 `parquet:"x" json:"x"`
}

// SupportRow2D is one cell of a 2-D task's evaluation grid, at its centre (x0, x1).
type SupportRow2D struct {
	Cell int64   `parquet:"cell" json:"cell"`
	X0   float64 `parquet:"x0" json:"x0"`
	X1   float64 `parquet:"x1" json:"x1"`
}

// SupportRowBits is one state x of {0,1}^D: bits is its D bits as '0'/'1', character
// d for bit d of x (x = Σ_d bit_d·2^d).
type SupportRowBits struct {
	X    int64  `parquet:"x" json:"x"`
	Bits string `parquet:"bits" json:"bits"`
}
