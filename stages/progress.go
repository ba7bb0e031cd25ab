package stages

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

// progress logs one line per unit of work through Beam's log package, at info level:
// on Dataflow it lands in the worker logs; on a local runner the worker's log stream
// reaches prism in this process, which re-logs it through log/slog, where the launcher
// prints it as a progress line (see launch.Logging).
func progress(ctx context.Context, format string, args ...any) {
	log.Infof(ctx, ProgressPrefix+format, args...)
}

// ProgressPrefix starts every progress line, so a log handler can tell them from the
// rest of a worker's log.
const ProgressPrefix = "progress: "

// Totals with an ETA: the launcher registers a run's block count (ExpectBlocks) when
// the workers run in its process, and the per-block stages (sample, train, evaluate)
// count their blocks against it, printing "train: 120/400 blocks (30%), 41 s elapsed,
// ETA 1 m 35 s" when a stage passes another tenth of its blocks, when 5 s have passed
// since its last such line, and at its last block. Elapsed time and ETA run from the
// start of the run (the stages work on the blocks side by side). Remote workers
// (Dataflow) find no registration and print none: their counts would be per worker.

// progressEvery is the longest a stage goes without a totals line while blocks finish.
const progressEvery = 5 * time.Second

type runProgress struct {
	total  int64
	start  time.Time
	stages map[string]*stageProgress
}

type stageProgress struct {
	done, tenth int64
	last        time.Time
}

var totals = struct {
	sync.Mutex
	runs map[string]*runProgress // by the location the stages write to (the run's staging folder)
}{runs: map[string]*runProgress{}}

// ExpectBlocks registers the number of blocks a run computes, for the totals lines of
// its stages writing to out; ForgetBlocks ends the registration.
func ExpectBlocks(out string, blocks int64) {
	totals.Lock()
	defer totals.Unlock()
	totals.runs[out] = &runProgress{total: blocks, start: time.Now(), stages: map[string]*stageProgress{}}
}

// ForgetBlocks ends ExpectBlocks' registration of out.
func ForgetBlocks(out string) {
	totals.Lock()
	defer totals.Unlock()
	delete(totals.runs, out)
}

// blockDone counts one block of stage done in the run writing to out and prints the
// stage's totals line when one is due.
func blockDone(ctx context.Context, out, stage string) {
	if line := countBlock(out, stage, time.Now()); line != "" {
		progress(ctx, "%s", line)
	}
}

// countBlock counts one block and returns the totals line due, if any.
func countBlock(out, stage string, now time.Time) string {
	totals.Lock()
	defer totals.Unlock()
	r := totals.runs[out]
	if r == nil || r.total <= 0 {
		return ""
	}
	sp := r.stages[stage]
	if sp == nil {
		sp = &stageProgress{last: r.start}
		r.stages[stage] = sp
	}
	sp.done++
	tenth := sp.done * 10 / r.total
	if sp.done < r.total && tenth == sp.tenth && now.Sub(sp.last) < progressEvery {
		return ""
	}
	sp.tenth, sp.last = tenth, now
	elapsed := now.Sub(r.start)
	line := fmt.Sprintf("%s: %d/%d blocks (%d%%), %s elapsed", stage, sp.done, r.total, sp.done*100/r.total, FormatDuration(elapsed))
	if sp.done >= r.total {
		return line + ", done"
	}
	eta := time.Duration(float64(elapsed) / float64(sp.done) * float64(r.total-sp.done))
	return line + ", ETA " + FormatDuration(eta)
}

// FormatDuration writes d for a person: "41 s", "1 m 35 s", "2 h 05 m"; under a
// second "0.4 s".
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s := int(d.Round(time.Second).Seconds())
		return fmt.Sprintf("%d m %02d s", s/60, s%60)
	}
	m := int(d.Round(time.Minute).Minutes())
	return fmt.Sprintf("%d h %02d m", m/60, m%60)
}
