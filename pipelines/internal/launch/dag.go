package launch

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/jemcheck/jemcheck/stages"
)

// Experiment is the DAG every pipeline runs over its grid points:
//
//	points → GenerateTables → SampleDatasets → Train (fan-out: table × method, batched)
//	       → Evaluate → CollectResults → Aggregate → Report
//
// with the tables, samples, results and learned joints written as Parquet on the way,
// all into the run's staging folder. It returns the summary (PCollection<schemas.Summary>,
// one element) for pipelines that add stages after Aggregate, and the keys each write
// stage emits, for Publish.
func Experiment(s beam.Scope, cfg *Config, title string) (summary beam.PCollection, written []beam.PCollection) {
	o := cfg.StageOptions()
	tables := stages.GenerateTables(s, o, Source(s, cfg.Points))
	wroteTables := stages.WriteTables(s, o, len(cfg.Points) > 1, tables)
	datasets := stages.SampleDatasets(s, o, tables)
	trained := stages.Train(s, o, datasets)
	results, learned := stages.Evaluate(s, trained)
	set := stages.CollectResults(s, results)
	wroteResults := stages.WriteResults(s, o, set)
	wroteLearned := stages.WriteLearned(s, o, learned)
	summary = stages.Aggregate(s, o, cfg.Pipeline, set)
	wroteReport := stages.Report(s, o, title, cfg.JSON(), summary, set, learned)
	return summary, []beam.PCollection{wroteTables, wroteResults, wroteLearned, wroteReport}
}

// Publish is every pipeline's last stage: once all written (the key collections of
// the write stages) are complete, the run's staging folder becomes the output.
func Publish(s beam.Scope, cfg *Config, written ...beam.PCollection) {
	stages.Publish(s, stages.Publication{Out: cfg.Options.Out, RunID: cfg.RunID, Pipeline: cfg.Pipeline,
		ConfigSHA256: cfg.configSHA256(), Overwrite: cfg.Overwrite}, written...)
}
