package launch

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/tasks"
)

// Experiment is the DAG every pipeline runs over its grid points:
//
//	blocks → GenerateTables → SampleDatasets → Train → Evaluate → SummarizePoints → Report
//
// Its elements are blocks of up to --train_batch/|methods| tables of one grid point
// (see stages.Block): a block is sampled, written to samples/, trained as one batch and
// evaluated in one DoFn call each, so the runner's cost per element stays small next to
// the work. The points themselves are the stages' configuration, not part of any
// element. The tables, samples, results and learned joints are written as Parquet on the
// way, all into the run's staging folder. A resumed run (Config.Resume) trains only the
// blocks its kept staging folder lacks: SkipBlocks drops the others after
// GenerateTables (WriteTables needs every block's truth) and stages.Kept reads their
// result rows and KL curves back for SummarizePoints and Report. It returns the points'
// summaries (PCollection<schemas.PointSummary>) for pipelines that add stages after
// stages.Aggregate, and the keys each write stage emits, for Publish.
func Experiment(s beam.Scope, cfg *Config, title string) (summaries beam.PCollection, written []beam.PCollection) {
	o := cfg.StageOptions()
	points := cfg.Points
	tables := stages.GenerateTables(s, o, points, Source(s, tasks.BlockRefs(points, o.TrainBatch)))
	wroteTables := stages.WriteTables(s, o, points, tables)
	skip := cfg.Skipped()
	toTrain := tables
	if len(skip) > 0 { // a resumed run: its kept blocks are read back, not trained
		toTrain = stages.SkipBlocks(s, skip, tables)
	}
	datasets := stages.SampleDatasets(s, o, points, toTrain)
	trained := stages.Train(s, o, points, datasets)
	results, learned := stages.Evaluate(s, o, points, trained)
	wroteResults := stages.WriteResults(s, o, results)
	wroteLearned := stages.WriteLearned(s, o, learned)
	written = []beam.PCollection{wroteTables, wroteResults, wroteLearned}
	if len(skip) > 0 {
		keptResults, keptLearned, keptKeys := stages.Kept(s, o, points, skip)
		results = beam.Flatten(s, results, keptResults)
		learned = beam.Flatten(s, learned, keptLearned)
		written = append(written, keptKeys)
	}
	summaries = stages.SummarizePoints(s, o, points, results)
	wroteReport := stages.Report(s, o, points, cfg.Pipeline, title, cfg.JSON(), summaries, results, learned)
	return summaries, append(written, wroteReport)
}

// Publish is every pipeline's last stage: once all written (the key collections of
// the write stages) are complete, the run's staging folder becomes the output.
func Publish(s beam.Scope, cfg *Config, written ...beam.PCollection) {
	stages.Publish(s, stages.Publication{Out: cfg.Options.Out, RunID: cfg.RunID, Pipeline: cfg.Pipeline,
		ConfigSHA256: cfg.configSHA256(), Overwrite: cfg.Overwrite}, written...)
}
