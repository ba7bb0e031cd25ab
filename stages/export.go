package stages

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*exportPart)(nil)).Elem())
	beam.RegisterFunction(exportPartFn)
	beam.RegisterDoFn(reflect.TypeOf((*writeExportFn)(nil)).Elem())
}

// ExportKey is the export's description (schemas.Export).
const ExportKey = "export.json"

// exportPart is what the export's description needs of a sampled block.
type exportPart struct {
	PointID, Index, First int64
	IDs                   []int64
}

func exportPartFn(b Block) exportPart {
	return exportPart{PointID: b.PointID, Index: b.Index, First: b.First, IDs: b.IDs}
}

// WriteExport writes what a user's own training code needs beside the truth and the
// samples the other stages wrote: each point's evaluation support
// (points/point-NNNN.parquet, tasks.Supporter) and export.json (schemas.Export), and
// with csv a .csv sibling of every Parquet file of the export.
//
// In: PCollection<string> (the truth files' keys), PCollection<Block> (sampled, their
// samples written). Out: PCollection<string> (the keys written).
func WriteExport(s beam.Scope, opts Options, points []Point, csv bool, truthKeys, sampled beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteExport")
	parts := beam.ParDo(s, exportPartFn, sampled)
	one := beam.Impulse(s)
	return beam.ParDo(s, &writeExportFn{OutBucket: OutBucket{Out: opts.Out}, Options: opts, Points: points, CSV: csv}, one,
		beam.SideInput{Input: truthKeys}, beam.SideInput{Input: parts})
}

type writeExportFn struct {
	OutBucket
	Options Options
	Points  []Point
	CSV     bool
}

func (f *writeExportFn) ProcessElement(ctx context.Context, _ []byte, truthKeys func(*string) bool, parts func(*exportPart) bool, emit func(string)) error {
	var truths []string
	var k string
	for truthKeys(&k) {
		truths = append(truths, k)
	}
	slices.Sort(truths)
	byPoint := map[int64][]exportPart{}
	var part exportPart
	for parts(&part) {
		byPoint[part.PointID] = append(byPoint[part.PointID], part)
	}
	ex := schemas.Export{Format: schemas.ExportFormat, Config: "config.json"}
	var parquetKeys []string
	for i, p := range f.Points {
		sup, supporter, err := tasks.SupportOf(p)
		if err != nil {
			return fmt.Errorf("export point %d: %w", p.ID, err)
		}
		key := tasks.SupportPath(p.ID)
		if err := supporter.WriteSupport(ctx, f.bucket, f.Options, p, key); err != nil {
			return fmt.Errorf("export point %d: write %s: %w", p.ID, key, err)
		}
		emit(key)
		ps := byPoint[p.ID]
		slices.SortFunc(ps, func(a, b exportPart) int { return cmp.Compare(a.First, b.First) })
		k := tasks.MustOf(p.Task)
		d := k.Dimension(p)
		ep := schemas.ExportPoint{PointID: p.ID, Kind: k.Name(), Task: p.Task, Classes: p.Classes, Dimension: d,
			Samples: p.Samples, Tasks: p.Tables, IDs: []int64{}, IDColumn: sup.IDColumn, SupportColumn: sup.CellColumn,
			Support: sup.Cells, Columns: sup.Columns, About: sup.About, Grid: p.GridCells, Box: p.Box,
			Bounds: schemas.BoxBounds(p.Box, d), LabelColumn: schemas.LogitClassColumn,
			Logits: schemas.ExportLogitsOf(sup.IDColumn, sup.CellColumn), Model: p.Model,
			Files: schemas.ExportFiles{Points: key}}
		for _, part := range ps {
			ep.IDs = append(ep.IDs, part.IDs...)
			ep.Files.Samples = append(ep.Files.Samples, SamplePath(p.ID, part.Index))
		}
		if len(truths) == len(f.Points) {
			ep.Files.Truth = truths[i]
		}
		if err := f.describeFiles(ctx, &ep.Files); err != nil {
			return fmt.Errorf("export point %d: %w", p.ID, err)
		}
		ex.Points = append(ex.Points, ep)
		parquetKeys = append(parquetKeys, key)
		parquetKeys = append(parquetKeys, ep.Files.Samples...)
	}
	parquetKeys = append(parquetKeys, truths...)
	if err := schemas.WriteJSON(ctx, f.bucket, ExportKey, ex); err != nil {
		return fmt.Errorf("export: write %s: %w", ExportKey, err)
	}
	emit(ExportKey)
	if f.CSV {
		for _, key := range parquetKeys {
			out := csvSibling(key)
			if err := schemas.ParquetToCSV(ctx, f.bucket, key, out); err != nil {
				return fmt.Errorf("export: %s as CSV: %w", key, err)
			}
			emit(out)
		}
	}
	progress(ctx, "export: %d point(s) -> %s", len(f.Points), ExportKey)
	return nil
}

// csvSibling is the CSV copy of the Parquet file key.
func csvSibling(key string) string { return strings.TrimSuffix(key, ".parquet") + ".csv" }

// describeFiles names the columns of a point's files (from the files themselves) and,
// with CSV, their CSV siblings.
func (f *writeExportFn) describeFiles(ctx context.Context, files *schemas.ExportFiles) error {
	var err error
	cols := func(key string) []string {
		if key == "" || err != nil {
			return nil
		}
		var c []string
		c, err = schemas.ParquetColumns(ctx, f.bucket, key)
		return c
	}
	if len(files.Samples) > 0 {
		files.SamplesColumns = cols(files.Samples[0])
	}
	files.PointsColumns = cols(files.Points)
	files.TruthColumns = cols(files.Truth)
	if err != nil {
		return err
	}
	if f.CSV {
		for _, k := range files.Samples {
			files.SamplesCSV = append(files.SamplesCSV, csvSibling(k))
		}
		files.PointsCSV = csvSibling(files.Points)
		if files.Truth != "" {
			files.TruthCSV = csvSibling(files.Truth)
		}
	}
	return nil
}
