package stages

import (
	"testing"
	"time"
)

// TestTotalsLines: a stage prints its totals when it passes another tenth of its
// blocks, when 5 s passed since its last line, and at its last block, with the ETA
// from the run's elapsed time; unregistered runs print none.
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
		{"second block: 10%", "mem://p", 2 * time.Second, "train: 2/20 blocks (10%), 2 s elapsed, ETA 18 s"},
		{"third block, same tenth", "mem://p", 3 * time.Second, ""},
		{"fourth block: 20%", "mem://p", 4 * time.Second, "train: 4/20 blocks (20%), 4 s elapsed, ETA 16 s"},
		{"fifth block 5 s later", "mem://p", 9 * time.Second, "train: 5/20 blocks (25%), 9 s elapsed, ETA 27 s"},
		{"another run, unregistered", "mem://q", 9 * time.Second, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := countBlock(c.out, "train", start.Add(c.after)); got != c.want {
				t.Errorf("line %q, want %q", got, c.want)
			}
		})
	}
	var last string
	for range 15 {
		last = countBlock("mem://p", "train", start.Add(100*time.Second))
	}
	if want := "train: 20/20 blocks (100%), 1 m 40 s elapsed, done"; last != want {
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
