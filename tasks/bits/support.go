package bits

import (
	"context"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

// Support: every state of {0,1}^D (learned/'s table_id and x).
func (Kind) Support(p tasks.Point) tasks.Support {
	return tasks.Support{IDColumn: "table_id", CellColumn: "x", Cells: p.XValues, Columns: []string{"bits"},
		About: "x is a state of {0,1}^D numbered by its bits, x = Σ_d bit_d·2^d; bits spells them, character d for bit d"}
}

// WriteSupport writes the states, streamed in chunks.
func (k Kind) WriteSupport(ctx context.Context, b *blob.Bucket, _ tasks.Options, p tasks.Point, key string) error {
	d := k.Dimension(p)
	return schemas.WriteParquetStream(ctx, b, key, func(write func([]schemas.SupportRowBits) error) error {
		const chunk = 1 << 14
		rows := make([]schemas.SupportRowBits, 0, chunk)
		s := make([]byte, d)
		for x := range p.XValues {
			for i := range d {
				s[i] = '0' + byte(x>>i&1)
			}
			rows = append(rows, schemas.SupportRowBits{X: int64(x), Bits: string(s)})
			if len(rows) == chunk || x == p.XValues-1 {
				if err := write(rows); err != nil {
					return err
				}
				rows = rows[:0]
			}
		}
		return nil
	})
}
