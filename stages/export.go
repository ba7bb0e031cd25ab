package stages

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
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
	beam.RegisterDoFn(reflect.TypeOf((*writeArraysFn)(nil)).Elem())
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

// WriteArrays writes, for the points whose kind an export writes as numpy arrays
// (tasks.Arrayer: images), each sampled block's tasks as .npz files
// (tasks.ArraySource); blocks of other kinds pass without output.
//
// In: PCollection<Block> (sampled). Out: PCollection<string> (the keys written).
func WriteArrays(s beam.Scope, opts Options, points []Point, sampled beam.PCollection) beam.PCollection {
	s = s.Scope("stages.WriteArrays")
	return beam.ParDo(s, &writeArraysFn{OutBucket: OutBucket{Out: opts.Out}, Sources: Sources{Options: opts, Points: points}}, sampled)
}

type writeArraysFn struct {
	OutBucket
	Sources
}

func (f *writeArraysFn) Setup(ctx context.Context) error {
	if err := f.Sources.Setup(ctx); err != nil {
		return fmt.Errorf("write arrays: %w", err)
	}
	return f.OutBucket.Setup(ctx)
}

func (f *writeArraysFn) Teardown() error {
	return errors.Join(f.Sources.Teardown(), f.OutBucket.Teardown())
}

func (f *writeArraysFn) ProcessElement(ctx context.Context, b Block, emit func(string)) error {
	p, src, err := f.source(b.PointID)
	if err != nil {
		return fmt.Errorf("write arrays: %w", err)
	}
	as, ok := src.(tasks.ArraySource)
	if !ok {
		return nil
	}
	keys, err := as.WriteArrays(ctx, b, f.bucket)
	if err != nil {
		return fmt.Errorf("write arrays: point %d block %d: %w", p.ID, b.Index, err)
	}
	for _, k := range keys {
		emit(k)
	}
	if len(keys) > 0 {
		progress(ctx, "export: point %d: %d task(s) as arrays -> %s/", p.ID, len(keys), path.Dir(keys[0]))
	}
	return nil
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
		k := tasks.MustOf(p.Task)
		arrayer, arrays := k.(tasks.Arrayer)
		// The support (points/), or for a kind written as arrays (images) none: its
		// tasks' .npz files (WriteArrays) and an ONNX classifier instead of logits.
		var sup tasks.Support
		key := ""
		if !arrays {
			var supporter tasks.Supporter
			var err error
			if sup, supporter, err = tasks.SupportOf(p); err != nil {
				return fmt.Errorf("export point %d: %w", p.ID, err)
			}
			key = tasks.SupportPath(p.ID)
			if err := supporter.WriteSupport(ctx, f.bucket, f.Options, p, key); err != nil {
				return fmt.Errorf("export point %d: write %s: %w", p.ID, key, err)
			}
			emit(key)
		}
		ps := byPoint[p.ID]
		slices.SortFunc(ps, func(a, b exportPart) int { return cmp.Compare(a.First, b.First) })
		d := k.Dimension(p)
		ep := schemas.ExportPoint{PointID: p.ID, Kind: k.Name(), Task: p.Task, Classes: p.Classes, Dimension: d,
			Samples: p.Samples, Tasks: p.Tables, IDs: []int64{}, IDColumn: sup.IDColumn, SupportColumn: sup.CellColumn,
			Support: sup.Cells, Columns: sup.Columns, About: sup.About, Grid: p.GridCells, Box: p.Box,
			Bounds: schemas.BoxBounds(p.Box, d), LabelColumn: schemas.LogitClassColumn,
			Logits: schemas.ExportLogitsOf(sup.IDColumn, sup.CellColumn), Model: p.Model,
			Split: exportSplit(f.Options, p), Files: schemas.ExportFiles{Points: key}}
		for _, part := range ps {
			ep.IDs = append(ep.IDs, part.IDs...)
			ep.Files.Samples = append(ep.Files.Samples, SamplePath(p.ID, part.Index))
		}
		if arrays {
			ep.IDColumn, ep.Logits = "task_id", schemas.ExportLogits{Columns: []string{}}
			ep.About = "no finite support: a classifier of these tasks is judged as a function (an ONNX file, pipelines/evaluate --onnx) on fresh exact draws; " +
				"each task's arrays (files.arrays, one .npz per task) hold its training draws with the held-out marker, the evaluation draws and the truth's parameters"
			o := arrayer.ONNXAbout(p)
			ep.ONNX = &o
			ep.Files.ArraysAbout = arrayer.ArraysAbout(p, f.Options)
			for _, id := range ep.IDs {
				ep.Files.Arrays = append(ep.Files.Arrays, arrayer.ArraysPath(p, id))
			}
		}
		if len(truths) == len(f.Points) {
			ep.Files.Truth = truths[i]
		}
		if err := f.describeFiles(ctx, &ep.Files, !arrays); err != nil {
			return fmt.Errorf("export point %d: %w", p.ID, err)
		}
		ex.Points = append(ex.Points, ep)
		if key != "" {
			parquetKeys = append(parquetKeys, key)
		}
		if !arrays { // images' samples hold a list column, which has no CSV form: the arrays replace them
			parquetKeys = append(parquetKeys, ep.Files.Samples...)
			if ep.Files.Truth != "" {
				parquetKeys = append(parquetKeys, ep.Files.Truth)
			}
		}
	}
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

// exportSplit is the held-out split of point p's draws (tasks.Options.Split), as
// export.json states it.
func exportSplit(o Options, p Point) schemas.ExportSplit {
	train, held := o.Split(p)
	sp := schemas.ExportSplit{Column: schemas.HeldoutColumn, Train: train, HeldOut: held}
	if held == 0 {
		sp.About = fmt.Sprintf("no held-out split: jemcheck's methods on %s (exact jem included) train on all %d draws of each task and keep their last iterate; "+
			"%s is 0 on every row, and your model trains on every draw too", tasks.MustOf(p.Task).Noun(), p.Samples, schemas.HeldoutColumn)
		return sp
	}
	sp.Holdout = o.Holdout
	sp.About = fmt.Sprintf("of each task's %d draws, in draw order, the first %d (%s = 0) are trained on and the last %d (%s = 1: ⌈%d × %g⌉) are held out, "+
		"the same for every task and method: jemcheck's methods (exact jem, where the kind has it, included) train on %s = 0 only "+
		"(on 2-D and block tasks the held-out draws select the iterate kept, --select=%s); train your model on %s = 0 only",
		p.Samples, train, schemas.HeldoutColumn, held, schemas.HeldoutColumn, p.Samples, o.Holdout, schemas.HeldoutColumn, o.Select, schemas.HeldoutColumn)
	return sp
}

// csvSibling is the CSV copy of the Parquet file key.
func csvSibling(key string) string { return strings.TrimSuffix(key, ".parquet") + ".csv" }

// describeFiles names the columns of a point's files (from the files themselves) and,
// with CSV, their CSV siblings; tabular says whether the truth is a Parquet file and
// the samples have a CSV form (not on images: the truth is a folder of JSON
// parameters, the samples hold a list column, and the .npz arrays replace both).
func (f *writeExportFn) describeFiles(ctx context.Context, files *schemas.ExportFiles, tabular bool) error {
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
	if tabular {
		files.TruthColumns = cols(files.Truth)
	}
	if err != nil {
		return err
	}
	if f.CSV && tabular {
		for _, k := range files.Samples {
			files.SamplesCSV = append(files.SamplesCSV, csvSibling(k))
		}
		if files.Points != "" {
			files.PointsCSV = csvSibling(files.Points)
		}
		if files.Truth != "" {
			files.TruthCSV = csvSibling(files.Truth)
		}
	}
	return nil
}
