package stages

import (
	"context"
	"fmt"
	"strings"
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
// the workers run in its process, and the per-block stages (sample, train, evaluate:
// a block goes through them one after the other) count their blocks against it. The
// last of them, evaluate, prints one line for the three, "blocks: 120/400 (30%):
// sampled 122, trained 121, evaluated 120; 41 s elapsed, ETA 1 m 35 s", when it
// passes another tenth of the blocks, when 5 s have passed since the last such line,
// and at the last block. Elapsed time and ETA run from the start of the run. Remote
// workers (Dataflow) find no registration and print none: their counts would be per
// worker.

// progressEvery is the longest the totals go without a line while blocks finish.
const progressEvery = 5 * time.Second

// blockStages are the per-block stages counted, in order (the last one prints), and
// what their counts say.
var (
	blockStages = []string{"sample", "train", "evaluate"}
	blockDid    = []string{"sampled", "trained", "evaluated"}
)

type runProgress struct {
	total       int64
	start, last time.Time
	tenth       int64
	done        map[string]int64 // by stage
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
	now := time.Now()
	totals.runs[out] = &runProgress{total: blocks, start: now, last: now, done: map[string]int64{}}
}

// ForgetBlocks ends ExpectBlocks' registration of out.
func ForgetBlocks(out string) {
	totals.Lock()
	defer totals.Unlock()
	delete(totals.runs, out)
}

// blockDone counts one block of stage done in the run writing to out and prints the
// totals line when one is due.
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
	r.done[stage]++
	last := blockStages[len(blockStages)-1]
	if stage != last {
		return ""
	}
	done := r.done[last]
	tenth := done * 10 / r.total
	if done < r.total && tenth == r.tenth && now.Sub(r.last) < progressEvery {
		return ""
	}
	r.tenth, r.last = tenth, now
	counts := make([]string, len(blockStages))
	for i, st := range blockStages {
		counts[i] = fmt.Sprintf("%s %d", blockDid[i], r.done[st])
	}
	elapsed := now.Sub(r.start)
	line := fmt.Sprintf("blocks: %d/%d (%d%%): %s; %s elapsed", done, r.total, done*100/r.total, strings.Join(counts, ", "), FormatDuration(elapsed))
	if done >= r.total {
		return line + ", done"
	}
	eta := time.Duration(float64(elapsed) / float64(done) * float64(r.total-done))
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
