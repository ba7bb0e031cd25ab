// Command iscover measures the coverage of the importance-sampling estimate of log Z
// on block tasks (issue 32 item 8): how often its 95% interval covers the
// block-additive model's exact log Z (the grids' quadrature), and hence its exact joint
// KL (kl_joint_is − kl_joint = log_z_is − log_z), how many estimates are refused, the
// mean z and the ESS and Pareto k̂.
//
// train trains every method on tasks of a block point with the kind's own source (as
// the stages do: the kind's defaults, --select=heldout) and writes the parameters, with
// the pipeline's own IS columns from the binary that trained them (the "before" row),
// to a gob file, after every block of 4 tasks:
//
//	GOEXPERIMENT=simd go build -o /tmp/iscover ./scripts/iscover
//	nice /tmp/iscover train -task=blocks:16,gmm:3,2 -tables=20 -methods=baseline,jem,sgld -seed=1 -out=b16.gob
//	nice /tmp/iscover train -task=blocks:32,gmm:3,2 -tables=20 -methods=baseline,jem -seed=1 -out=b32.gob
//
// eval re-estimates each run's log Z with the estimators of this tree: the continuous
// path (prob.BlocksTask.ImportanceLogZ, the additive rows' log_z_is) at each per-block
// share ε (0: the earlier proposal ½·p + ½·u, the same draws) under the old rule (delta
// SE, refused at ESS < 100 only) and the new one (prob.ImportanceLogZ), and the
// evaluation points' path (blocks.EvaluateLogits, joint points) likewise:
//
//	nice /tmp/iscover eval -in=b16.gob -methods=all -eps=0,auto -v
//	nice /tmp/iscover eval -in=b32.gob -methods=jem -eps=auto -n=100000 -points=false
//
// -adapted adds the estimate a joint model's row makes (blocks.EvalSet.AdaptedLogZ with
// prob.DefaultAdapt, changed by -adapt=key=value,…: the proposal adapted to the model,
// which sees it only through its logits), refusals counted as misses; -hist=G prints,
// as a diagnostic that knows the model is additive, the ESS under the histogram of its
// exact class-wise block marginals at G, 2G and 4G cells a side (the variation within a
// cell alone). The conditional histogram's measurement (models/prob/importance_adapted.go):
//
//	nice /tmp/iscover train -task=blocks:16,gmm:3,2 -tables=4 -methods=baseline,jem,sgld,mala,jarzynski,shortrun,dsm,drl,ed,nce,tre,snl -steps=600 -seed=5 -out=b32.gob
//	nice /tmp/iscover eval -in=b32.gob -methods=all -continuous=false -points=false -adapted
//	nice /tmp/iscover eval -in=b32.gob -methods=all -continuous=false -points=false -adapted -adapt=cond=0,hist=0.5,full=0.25   (the proposal before it)
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: iscover train|eval …")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "train":
		err = train(os.Args[2:])
	case "eval":
		err = eval(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "iscover:", err)
		os.Exit(1)
	}
}
