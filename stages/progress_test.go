package stages

import (
	"testing"
	"time"
)

// TestTotalsLines: the evaluate stage prints the totals of the three per-block stages
// when it passes another tenth of the blocks, when 5 s passed since the last line, and
// at the last block, with the ETA from the run's elapsed time; an unregistered run
// prints none.
func TestTotalsLines(t *testing.T) {
	ExpectBlocks("mem://p", 20)
	defer ForgetBlocks("mem://p")
	start := totals.runs["mem://p"].start
	cases := []struct {
		name  string
		out   string
		after time.Duration // since the run's start
		want  string        // "" = no line
	}{
		{"first block, no tenth yet", "mem://p", 1 * time.Second, ""},
		{"second block: 10%", "mem://p", 2 * time.Second, "blocks: 2/20 (10%): sampled 3, trained 3, evaluated 2; 2 s elapsed, ETA 18 s"},
		{"third block, same tenth", "mem://p", 3 * time.Second, ""},
		{"fourth block: 20%", "mem://p", 4 * time.Second, "blocks: 4/20 (20%): sampled 5, trained 5, evaluated 4; 4 s elapsed, ETA 16 s"},
		{"fifth block 5 s later", "mem://p", 9 * time.Second, "blocks: 5/20 (25%): sampled 6, trained 6, evaluated 5; 9 s elapsed, ETA 27 s"},
		{"another run, unregistered", "mem://q", 9 * time.Second, ""},
	}
	countBlock("mem://p", "sample", start)
	countBlock("mem://p", "train", start)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			countBlock(c.out, "sample", start.Add(c.after))
			if got := countBlock(c.out, "train", start.Add(c.after)); got != "" {
				t.Errorf("the train stage printed %q", got)
			}
			if got := countBlock(c.out, "evaluate", start.Add(c.after)); got != c.want {
				t.Errorf("line %q, want %q", got, c.want)
			}
		})
	}
	var last string
	for range 15 {
		last = countBlock("mem://p", "evaluate", start.Add(100*time.Second))
	}
	if want := "blocks: 20/20 (100%): sampled 6, trained 6, evaluated 20; 1 m 40 s elapsed, done"; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
}

func TestFormatDuration(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{400 * time.Millisecond, "0.4 s"},
		{41 * time.Second, "41 s"},
		{95 * time.Second, "1 m 35 s"},
		{2*time.Hour + 5*time.Minute + 20*time.Second, "2 h 05 m"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			if got := FormatDuration(c.d); got != c.want {
				t.Errorf("FormatDuration(%v) = %q, want %q", c.d, got, c.want)
			}
		})
	}
}
