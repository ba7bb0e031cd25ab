// Command leaderboard judges JEM recipes against exact JEM under the protocol
// (tasks/protocol.go): it picks each recipe's tuned options from its tuning runs, and
// ranks the recipes of board runs by their paired excess joint KL over exact jem
// (the set indistinguishable from the best, the Friedman test and critical difference,
// the smallest detectable difference), with the budget-matched view and the cost frontier.
//
//	leaderboard pick   --tune=DIR,DIR,… --out=DIR [--tasks=… --tables=10 --replicates=3]
//	leaderboard report --board=DIR [--tuned=DIR,…] [--picks=DIR/picks.json] --out=DIR
//
// scripts/leaderboard.sh runs the whole leaderboard: the tuning sweeps, pick, the board
// at the defaults and at the picks, and report.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// config is a leaderboard command's settings.
type config struct {
	Verb               string
	Tune, Board, Tuned []string
	Variants           []string
	Picks, Out         string
	Tasks              []string
	Tables, Replicates int
	PerTask            bool // pick: one pick per task (dimension) instead of one per method
	Seed               uint64
	Overwrite          bool
	Metric             string
}

// usageLine is the command's usage.
const usageLine = "usage: leaderboard pick --tune=DIR,… --out=DIR | leaderboard report --board=DIR [--tuned=DIR,…] [--picks=FILE] --out=DIR | leaderboard smoke SPEC"

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "-h" || os.Args[1] == "-help" || os.Args[1] == "--help") {
		fmt.Println(usageLine)
		fmt.Println("\npick ranks each recipe's tuning settings (and exact jem's lr and batch) by held-out NLL less exact jem's (truth-free; the truth's excess shown beside) and writes picks.json and a tuned spec per method;")
		fmt.Println("report ranks the board's runs (excess over the best, the set indistinguishable from it, Friedman and the critical difference, the budget-matched view, the frontier) into leaderboard.md and leaderboard.json.")
		fmt.Println("smoke prints a board spec at the smoke board's tiny settings (scripts/leaderboard.sh --smoke).")
		fmt.Println("scripts/leaderboard.sh runs the whole board (docs/leaderboard.md); scripts/leaderboard.sh --smoke every recipe at tiny settings, in minutes. Flags:")
		fs := flag.NewFlagSet("leaderboard", flag.ContinueOnError)
		fs.SetOutput(os.Stdout)
		defineFlags(fs)
		fs.PrintDefaults()
		os.Exit(0)
	}
	if len(os.Args) >= 2 && os.Args[1] == "smoke" {
		launch.Exit("leaderboard", smokeCmd(context.Background(), os.Args[2:], os.Stdout))
		return
	}
	if len(os.Args) < 2 || (os.Args[1] != "pick" && os.Args[1] != "report") {
		fmt.Fprintln(os.Stderr, usageLine+" (leaderboard --help for the flags)")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("leaderboard "+os.Args[1], flag.ExitOnError)
	tune, board, tuned, variants, picks, out, tasksFlag, metricFlag, tables, replicates, seed, overwrite := defineFlags(fs)
	perTask := fs.Bool("per_task", false, "pick: pick each method's setting per task (a ladder's dimension: the tuning runs of each task scored alone) and write a tuned spec per method and task (tuned-<method>-<task>.yaml, that task only)")
	_ = fs.Parse(os.Args[2:])
	cfg := config{Verb: os.Args[1], Tune: list(*tune), Board: list(*board), Tuned: list(*tuned), Variants: list(*variants), Picks: *picks, Out: *out,
		Tasks: taskList(*tasksFlag), Tables: *tables, Replicates: *replicates, Seed: *seed, Overwrite: *overwrite, Metric: *metricFlag, PerTask: *perTask}
	launch.Exit("leaderboard", runCmd(context.Background(), cfg, os.Stdout))
}

// defineFlags defines the command's flags on fs (the same for pick and report).
func defineFlags(fs *flag.FlagSet) (tune, board, tuned, variants, picks, out, tasksFlag, metricFlag *string, tables, replicates *int, seed *uint64, overwrite *bool) {
	tune = fs.String("tune", "", "pick: the tuning runs' folders (comma-separated; exact jem's among them)")
	board = fs.String("board", "", "report: the board's run folders at the recipes' defaults (comma-separated; exact jem among them)")
	tuned = fs.String("tuned", "", "report: the tuned boards' run folders (comma-separated)")
	variants = fs.String("variants", "", "report: run folders of a method at other options than its defaults (e.g. sgld's presets), each an entry named by the options that differ (comma-separated)")
	picks = fs.String("picks", "", "report: the picks file (pick's picks.json)")
	out = fs.String("out", "", "folder for picks.json and the tuned specs (pick), leaderboard.md and leaderboard.json (report)")
	tasksFlag = fs.String("tasks", "gmm:3,2,moons:0.1,circles:0.1", "pick: the board's tasks (families) for the tuned specs, ';'- or ','-separated task specs")
	tables = fs.Int("tables", 10, "pick: tasks per family on the board")
	replicates = fs.Int("replicates", 3, "pick: run seeds (replicates) on the board")
	seed = fs.Uint64("seed", 1, "report: the bootstrap's seed")
	metricFlag = fs.String("metric", metrics[0].Name, "report: what the boards rank, lower better: kl_joint (the paired excess over exact jem) or, where no exact jem exists (a CNN on images), a measure against the truth itself: "+metricNames())
	overwrite = fs.Bool("overwrite", false, "write into a non-empty --out that holds no jemcheck manifest.json (e.g. the folder of the board's runs), "+
		"replacing only the leaderboard's own names (leaderboard.md, leaderboard.json; picks.json, picks.md, tuned-*.yaml); deletes nothing")
	return
}

// list splits a comma-separated flag.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// taskList splits task specs, which hold commas themselves ("gmm:3,2"): a new task
// starts at an element with a colon.
func taskList(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if strings.Contains(p, ":") || len(out) == 0 {
			out = append(out, p)
		} else {
			out[len(out)-1] += "," + p
		}
	}
	return out
}

// smokeCmd prints the smoke version of the one spec it is given (smokeSpec).
func smokeCmd(ctx context.Context, args []string, w io.Writer) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return launch.BadInput("smoke: give one sweep spec (leaderboard smoke SPEC), got %q", args)
	}
	raw, err := storage.ReadSmall(ctx, args[0], storage.MaxMetadataBytes) // a regular file, bounded
	if err != nil {
		return launch.BadInput("smoke: %v", err)
	}
	out, err := smokeSpec(raw)
	if err != nil {
		return launch.BadInput("smoke: %s: %v", args[0], err)
	}
	_, err = w.Write(out)
	return err
}

func runCmd(ctx context.Context, cfg config, w io.Writer) error {
	if cfg.Out == "" {
		return launch.BadInput("out: no output folder given")
	}
	// The output is published as a run's is (launch.PublishFiles: ownership, lock,
	// staging, manifest); the inputs are read only, never created.
	files := map[string][]byte{}
	publish := func(inputs ...string) error {
		return launch.PublishFiles(ctx, cfg.Out, "leaderboard", stages.LeaderboardOutputs.MatchString, cfg.Overwrite, inputs, files)
	}
	switch cfg.Verb {
	case "pick":
		if len(cfg.Tune) == 0 {
			return launch.BadInput("tune: no tuning runs given")
		}
		runs, err := readRuns(ctx, cfg.Tune)
		if err != nil {
			return err
		}
		if cfg.PerTask {
			return pickPerTask(runs, cfg, w, files, publish)
		}
		scores, picks, truthPicks, err := pick(runs)
		if err != nil {
			return err
		}
		var md strings.Builder
		writeScores(&md, scores, picks, truthPicks)
		fmt.Fprint(w, md.String())
		f, err := json.MarshalIndent(map[string]any{"picks": picks, "truth_picks": truthPicks, "scores": scores}, "", "  ")
		if err != nil {
			return err
		}
		files["picks.json"], files["picks.md"] = f, []byte(md.String())
		for m, v := range picks {
			files["tuned-"+m+".yaml"] = []byte(tunedSpec(m, v, cfg.Tasks, cfg.Tables, cfg.Replicates))
		}
		return publish(cfg.Tune...)
	case "report":
		if len(cfg.Board) == 0 {
			return launch.BadInput("board: give the board's run folders at the defaults")
		}
		if cfg.Metric == "" {
			cfg.Metric = metrics[0].Name
		}
		m, ok := metricNamed(cfg.Metric)
		if !ok {
			return launch.BadInput("metric: unknown %q (want one of %s)", cfg.Metric, metricNames())
		}
		def, err := readRuns(ctx, cfg.Board)
		if err != nil {
			return err
		}
		var tuned []run
		if len(cfg.Tuned) > 0 {
			if tuned, err = readRuns(ctx, cfg.Tuned); err != nil {
				return err
			}
		}
		picks := map[string]map[string]string{}
		if cfg.Picks != "" {
			raw, err := storage.ReadSmall(ctx, cfg.Picks, storage.MaxMetadataBytes) // a regular file, bounded: not a FIFO or /dev/zero
			if err != nil {
				return launch.BadInput("picks: %v", err)
			}
			var p struct {
				Picks       map[string]map[string]string            `json:"picks"`
				PicksByTask map[string]map[string]map[string]string `json:"picks_by_task"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				return launch.BadInput("picks %s: %v", cfg.Picks, err)
			}
			picks = p.Picks
			for _, ps := range p.PicksByTask { // per task: the tuned options' keys (a row shows its runs' values)
				for m, v := range ps {
					if picks == nil {
						picks = map[string]map[string]string{}
					}
					if picks[m] == nil {
						picks[m] = map[string]string{}
					}
					maps.Copy(picks[m], v)
				}
			}
		}
		var variants []run
		if len(cfg.Variants) > 0 {
			if variants, err = readRuns(ctx, cfg.Variants); err != nil {
				return err
			}
		}
		entries, jem, err := entriesOf(m, def, tuned, picks, variants...)
		if err != nil {
			return err
		}
		bs := boards(m, entries, jem, cfg.Seed)
		cov := isCoverage(def)
		for i := range bs {
			if c, ok := cov[bs[i].Family]; ok {
				bs[i].IS = &c
			}
		}
		ls := ladders(bs)
		var md strings.Builder
		writeBoards(&md, bs)
		writeLadders(&md, ls)
		fmt.Fprint(w, md.String())
		raw, err := json.MarshalIndent(jsonSafe(struct {
			Boards  []Board  `json:"boards"`
			Ladders []Ladder `json:"ladders,omitempty"`
		}{bs, ls}), "", "  ")
		if err != nil {
			return err
		}
		files["leaderboard.md"], files["leaderboard.json"] = []byte(md.String()), raw
		for _, b := range bs {
			svg, err := cdFigure(b)
			if err != nil {
				return fmt.Errorf("critical-difference diagram of %s: %w", b.Family, err)
			}
			if svg != nil {
				files[cdFile(b.Family)] = svg
			}
			if svg, err = costFigure(b); err != nil {
				return fmt.Errorf("cost curves of %s: %w", b.Family, err)
			}
			if svg != nil {
				files[costFile(b.Family)] = svg
			}
		}
		for _, l := range ls {
			svg, err := ladderFigure(l)
			if err != nil {
				return fmt.Errorf("ladder of %s: %w", l.Family, err)
			}
			if svg != nil {
				files[ladderFile(l.Family)] = svg
			}
		}
		inputs := append(append(append(slices.Clone(cfg.Board), cfg.Tuned...), cfg.Variants...), cfg.Picks)
		return publish(inputs...)
	}
	return errors.New("unknown verb")
}
