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
// with the tables, samples, results and learned joints written as Parquet on the way.
// It returns the summary (PCollection<schemas.Summary>, one element) for pipelines that
// add stages after Aggregate.
func Experiment(s beam.Scope, cfg *Config, title string) beam.PCollection {
	o := cfg.Options
	tables := stages.GenerateTables(s, o, Source(s, cfg.Points))
	stages.WriteTables(s, o, len(cfg.Points) > 1, tables)
	datasets := stages.SampleDatasets(s, o, tables)
	trained := stages.Train(s, o, datasets)
	results, learned := stages.Evaluate(s, trained)
	set := stages.CollectResults(s, results)
	stages.WriteResults(s, o, set)
	stages.WriteLearned(s, o, learned)
	summary := stages.Aggregate(s, o, cfg.Pipeline, set)
	stages.Report(s, o, title, cfg.JSON(), summary, set, learned)
	return summary
}
