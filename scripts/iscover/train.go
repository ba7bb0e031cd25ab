package main

import (
	"context"
	"encoding/gob"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/tasks"
	_ "github.com/jemcheck/jemcheck/tasks/all"
)

// Run is one trained block-additive model of a task, with what the pipeline's own
// evaluation (the estimator compiled into the binary that trained it) reported.
type Run struct {
	Task    string
	Model   string
	Box     float64
	Grid    int
	K       int
	Seed    uint64 // the run seed
	Ordinal int64
	Method  string
	Steps   int
	Theta   []float32
	// The pipeline's row at training time.
	KLJoint, LogZ, LogZIS, LogZISSE, ISESS, KLJointIS float64
}

// train trains every method on tasks of a block point with the kind's own source (as
// the stages do) and writes the runs to a gob file.
func train(args []string) error {
	fs := flag.NewFlagSet("train", flag.ExitOnError)
	task := fs.String("task", "blocks:16,gmm:3,2", "block task")
	n := fs.Int("tables", 20, "tasks")
	ms := fs.String("methods", "jem", "methods")
	steps := fs.Int("steps", 0, "training steps (0: the kind's default)")
	seed := fs.Uint64("seed", 1, "run seed")
	out := fs.String("out", "", "gob file")
	model := fs.String("model", "", "model (empty: the kind's default, the block-additive MLP; joint:H,H a joint MLP, whose log Z only the adapted estimate weighs)")
	fs.Parse(args)
	ctx := context.Background()
	p, err := point(*task, *n, *ms, *steps, *model)
	if err != nil {
		return err
	}
	o := tasks.Options{Seed: *seed, TrainBatch: tasks.DefaultTrainBatch, ReportTables: 0, Select: tasks.SelectHeldout, Holdout: tasks.DefaultHoldout}
	k := tasks.MustOf(p.Task)
	if err := k.Check(ctx, o, p); err != nil {
		return err
	}
	src, err := k.Open(ctx, tasks.Env{Options: o}, p)
	if err != nil {
		return err
	}
	defer src.Close()
	var runs []Run
	const per = 4 // tasks per block: memory and progress
	for first := 0; first < p.Tables; first += per {
		start := time.Now()
		b := tasks.Block{PointID: p.ID, Index: int64(first / per), First: int64(first)}
		for i := first; i < min(p.Tables, first+per); i++ {
			id, truth, err := src.Truth(int64(i))
			if err != nil {
				return err
			}
			b.IDs, b.P = append(b.IDs, id), append(b.P, truth...)
		}
		if err := src.Sample(ctx, &b, nil, ""); err != nil {
			return err
		}
		tb, err := src.Train(ctx, b)
		if err != nil {
			return err
		}
		rb, _, err := src.Evaluate(ctx, tb)
		if err != nil {
			return err
		}
		for r, row := range rb.Rows {
			tr := tb.Trained(p, r)
			runs = append(runs, Run{Task: p.Task, Model: p.Model, Box: p.Box, Grid: p.GridCells, K: p.Classes, Seed: *seed,
				Ordinal: tr.Job.Dataset.Table.Ordinal, Method: tr.Job.Method, Steps: p.Steps, Theta: tr.Run.Theta,
				KLJoint: row.KLJoint, LogZ: row.LogZ, LogZIS: row.LogZIS, LogZISSE: row.LogZISSE, ISESS: row.ISESS, KLJointIS: row.KLJointIS})
			fmt.Fprintf(os.Stderr, "%s task %d %s: kl %.4f log Z %.4f IS %.4f ± %.4f ESS %.0f z %+.2f\n", p.Task, tr.Job.Dataset.Table.Ordinal,
				tr.Job.Method, row.KLJoint, row.LogZ, row.LogZIS, row.LogZISSE, row.ISESS, (row.LogZIS-row.LogZ)/row.LogZISSE)
		}
		fmt.Fprintf(os.Stderr, "block %d: %v\n", b.Index, time.Since(start).Round(time.Second))
		if err := save(*out, runs); err != nil { // after every block: a partial file is usable
			return err
		}
	}
	return nil
}

func save(path string, runs []Run) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(f).Encode(runs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

func load(paths string) ([]Run, error) {
	var all []Run
	for _, path := range strings.Split(paths, ",") {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		var runs []Run
		err = gob.NewDecoder(f).Decode(&runs)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, runs...)
	}
	return all, nil
}

// point is a block point of task as the pipelines resolve it: the kind's defaults for
// what is not given (steps 0, model "": the defaults).
func point(task string, tables int, ms string, steps int, model string) (tasks.Point, error) {
	g := schemas.DefaultGrid()
	g.Task = task
	given := map[string]bool{"tables": true, "methods": true}
	if model != "" {
		g.Model = model
		given["model"] = true
	}
	if steps > 0 {
		g.Steps = steps
		given["steps"] = true
	}
	list, err := methods.Parse(ms)
	if err != nil {
		return tasks.Point{}, err
	}
	p := tasks.Point{Grid: g, Tables: tables, Methods: list}
	p.Defaults(func(a string) bool { return given[a] })
	p.Resolve()
	return p, p.Validate()
}
