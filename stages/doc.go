// Package stages holds the composites of jemcheck's DAG, one per file, each named after
// what it does and documented with its element types in and out:
//
//	GenerateTables  BlockRef → Block                  the true tables of a block
//	SampleDatasets  Block → Block (+ samples/)       N draws per table, as cell counts
//	Train           Block → TrainedBlock              a block's runs, one graph per training shape
//	Evaluate        TrainedBlock → ResultBlock, LearnedBlock   KLs, the error split, references
//	Aggregate       ResultBlock → schemas.Summary     per point and method (a combine of PointAcc), and the verdict
//	Report          Summary, ResultBlock, LearnedBlock → summary.json, report.html, figures/
//	WriteVerdict    Summary → verdict.json            the regression check
//	Publish         written keys → manifest.json      the run's staging folder becomes --out
//
// Elements are blocks of tables of one grid point (see Block): the grid points are
// the DoFns' configuration, held in exported fields, and elements carry only a point id
// and table ordinals. Every random draw derives from the run seed and the identity of
// the table (its ordinal), the run's method or the point (see the seed helpers
// tasks.TableSeed and tasks.SampleSeed), never from a batch-mate. The verdict's
// statistics live in package verdict; the pure maths (tables, KL, the model families'
// projections, exact references, tests) in models/prob.
package stages
