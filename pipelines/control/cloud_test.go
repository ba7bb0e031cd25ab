package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/jemcheck/jemcheck/internal/emulators"
	"github.com/jemcheck/jemcheck/internal/emulators/outputs"
	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/stages"
	"github.com/jemcheck/jemcheck/storage"
)

// The tests of this file run control against real storage protocol servers on
// loopback (internal/emulators: fake-gcs-server for gs://, gofakes3 for s3://) and
// check that what a run publishes there is what the same run publishes into a
// file:// folder: every file byte for byte, but config.json (it records the
// locations: compared with each location replaced by its role) and manifest.json (its
// run id, and config.json's hash: compared entry by entry, both verified).

// cloudConfig is a small control run: 8 tables in 2 blocks of 5 (report table in
// block 0), 300 steps.
func cloudConfig(out string) launch.Config {
	cfg := tiny(out)
	cfg.Points[0].Tables = 8
	cfg.Points[0].Steps = 300
	cfg.Options.ReportTables = 1
	return cfg
}

// fileLoc is the file:// URL of a new folder.
func fileLoc(t *testing.T, name string) string {
	return "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), name))
}

// timed runs cfg, failing the test on error, and returns what it printed.
func timed(t *testing.T, what string, cfg launch.Config) string {
	t.Helper()
	var buf bytes.Buffer
	start := time.Now()
	if err := run(context.Background(), cfg, &buf); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, buf.String())
	}
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	return buf.String()
}

func localPath(loc string) string { return strings.TrimPrefix(loc, "file://") }

// TestCloudControl: control with --out on gs:// and on s3:// publishes what it
// publishes into file://; so does control with --tables_from on the same store; and
// so does the command itself (a process, flags on the command line).
func TestCloudControl(t *testing.T) {
	testenv.Slow(t, "seven pipeline runs, two of them processes, against emulators")
	begin := time.Now()
	servers := emulators.Both(t)
	want := []string{"config.json", "tables.parquet", stages.ResultsPath(0, 0), stages.SamplePath(0, 1),
		stages.LearnedPath(0, 1), "summary.json", "report.html"}

	ref := outputs.Run{Out: fileLoc(t, "ref")}
	ref.Locs = map[string]string{"out": ref.Out}
	timed(t, "file:// reference", cloudConfig(ref.Out))
	tablesFile := filepath.Join(localPath(ref.Out), "tables.parquet")

	// --tables_from: the reference reads a local file, the cloud runs an object.
	refFrom := outputs.Run{Out: fileLoc(t, "ref-from")}
	refFrom.Locs = map[string]string{"out": refFrom.Out, "tables_from": "file://" + tablesFile}
	cfg := cloudConfig(refFrom.Out)
	cfg.Options.TablesFrom = refFrom.Locs["tables_from"]
	timed(t, "file:// reference, --tables_from", cfg)

	// The command, as a process: --out and --tables_from given on its command line.
	args := "--seed=7 --train_batch=16 --report_tables=1 --samples=500 --steps=300 --lr=0.05 --methods=baseline,jem,oracle"
	refCLI := outputs.Run{Out: fileLoc(t, "ref-cli")}
	refCLI.Locs = map[string]string{"out": refCLI.Out, "tables_from": "file://" + tablesFile}
	cli(t, "file:// reference, the command", args+" --tables_from="+refCLI.Locs["tables_from"], refCLI.Out)

	for _, s := range servers {
		t.Run(s.Scheme, func(t *testing.T) {
			out := outputs.Run{Out: s.Loc("jc-test", "control/plain")}
			out.Locs = map[string]string{"out": out.Out}
			timed(t, s.Scheme+":// run", cloudConfig(out.Out))
			n := outputs.Same(t, ref, out, want...)
			t.Logf("--out=%s://: %d files byte-identical to file://, config.json and manifest.json the same by structure", s.Scheme, n)

			tables := s.Object("jc-test", "inputs/tables.parquet")
			outputs.CopyFile(t, tablesFile, tables)
			from := outputs.Run{Out: s.Loc("jc-test", "control/from")}
			from.Locs = map[string]string{"out": from.Out, "tables_from": tables}
			cfg := cloudConfig(from.Out)
			cfg.Options.TablesFrom = tables
			timed(t, s.Scheme+":// run, --tables_from", cfg)
			n = outputs.Same(t, refFrom, from, want...)
			t.Logf("--tables_from=%s:// --out=%s://: %d files byte-identical", s.Scheme, s.Scheme, n)

			c := outputs.Run{Out: s.Loc("jc-test", "control/cli")}
			c.Locs = map[string]string{"out": c.Out, "tables_from": tables}
			cli(t, s.Scheme+":// the command", args+" --tables_from="+tables, c.Out)
			n = outputs.Same(t, refCLI, c, want...)
			t.Logf("the command with --tables_from=%s:// --out=%s://: %d files byte-identical", s.Scheme, s.Scheme, n)
		})
	}
	t.Logf("TestCloudControl: %v in all", time.Since(begin).Round(time.Millisecond))
}

// cli runs the control command as a process with args and --out=out (its
// environment carries the emulators'), failing the test unless it exits 0.
func cli(t *testing.T, what, args, out string) {
	t.Helper()
	start := time.Now()
	code, msg := launchtest.RunMain(t, args, out)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s", what, code, msg)
	}
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
}

// TestCloudResume: a run into gs:// or s3:// stopped part-way keeps its complete
// blocks in the bucket; --resume computes only the others and publishes what an
// uninterrupted file:// run does.
func TestCloudResume(t *testing.T) {
	testenv.Slow(t, "five pipeline runs against emulators")
	begin := time.Now()
	servers := emulators.Both(t)
	ref := outputs.Run{Out: fileLoc(t, "ref")}
	ref.Locs = map[string]string{"out": ref.Out}
	timed(t, "file:// reference, uninterrupted", resumeConfig(ref.Out))

	for _, s := range servers {
		t.Run(s.Scheme, func(t *testing.T) {
			ctx := context.Background()
			out := outputs.Run{Out: s.Loc("jc-test", "control/resume")}
			out.Locs = map[string]string{"out": out.Out}
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			var once sync.Once
			stages.AfterResultsWritten = func(_, _ int64) {
				time.Sleep(100 * time.Millisecond)
				if kept(t, out.Out) >= 2 {
					once.Do(cancel)
				}
			}
			defer func() { stages.AfterResultsWritten = nil }()
			var buf bytes.Buffer
			start := time.Now()
			err := run(runCtx, resumeConfig(out.Out), &buf)
			cancel()
			if !errors.Is(err, launch.ErrInterrupted) {
				t.Fatalf("stopped run: %v, want it interrupted\n%s", err, buf.String())
			}
			settle(t, out.Out)
			stages.AfterResultsWritten = nil
			t.Logf("%s:// stopped run: %v (%v)", s.Scheme, time.Since(start).Round(time.Millisecond), err)

			cfg := resumeConfig(out.Out)
			cfg.Resume = true
			printed := timed(t, s.Scheme+":// resumed run", cfg)
			m := regexp.MustCompile(`resuming run \S+: (\d) of 5 blocks complete are kept`).FindStringSubmatch(printed)
			if m == nil || m[1] == "0" {
				t.Errorf("resumed run printed\n%s\nwant it to resume some of the 5 blocks", printed)
			} else {
				t.Log(m[0])
			}
			n := outputs.Same(t, ref, out, "summary.json", stages.ResultsPath(0, 4))
			t.Logf("--resume on %s://: %d files byte-identical to an uninterrupted file:// run", s.Scheme, n)
		})
	}
	t.Logf("TestCloudResume: %v in all", time.Since(begin).Round(time.Millisecond))
}

// kept counts the blocks a resume of the run staged under out would not recompute.
func kept(t *testing.T, out string) int {
	ctx := context.Background()
	b, err := storage.OpenExistingBucket(ctx, out)
	if err != nil {
		return 0
	}
	defer b.Close()
	var dirs []string
	it := b.List(&blob.ListOptions{Prefix: storage.StagingPrefix, Delimiter: "/"})
	for {
		o, err := it.Next(ctx)
		if err != nil {
			break
		}
		if o.IsDir {
			dirs = append(dirs, o.Key)
		}
	}
	if len(dirs) != 1 {
		return 0
	}
	loc, err := storage.SubLocation(out, dirs[0])
	if err != nil {
		return 0
	}
	st, err := storage.OpenExistingBucket(ctx, loc)
	if err != nil {
		return 0
	}
	defer st.Close()
	cfg := resumeConfig(out)
	cfg.Options.ReportTables = 2
	_, skip, _, err := stages.CompletedBlocks(ctx, st, cfg.Options, cfg.Points)
	if err != nil {
		t.Error(err)
	}
	return len(skip)
}

// settle waits until the stopped run's last writes have landed: no object added or
// removed under out for 500 ms.
func settle(t *testing.T, out string) {
	t.Helper()
	last, since := "", time.Now()
	for time.Since(since) < 500*time.Millisecond {
		ks, err := outputs.Keys(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.Join(ks, "\n"); s != last {
			last, since = s, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// raceConfig is the run each racer starts: the smallest that still runs every stage.
func raceConfig(out string) launch.Config {
	cfg := cloudConfig(out)
	cfg.Points[0].Tables = 4
	cfg.Options.WriteSamples = false
	return cfg
}

// staleLock plants the lock of a run that cannot be live any more into out: round
// by round, a lock older than storage.StaleLockAge from another host, or the lock of
// a process of this host that is gone.
func staleLock(t *testing.T, out string, round int, deadPID int) {
	t.Helper()
	host, _ := os.Hostname()
	info := storage.LockInfo{RunID: fmt.Sprintf("old-%d", round), Pipeline: "control", Host: "elsewhere", PID: 1,
		Started: time.Now().Add(-storage.StaleLockAge - time.Hour)}
	if round%2 == 1 {
		info = storage.LockInfo{RunID: fmt.Sprintf("dead-%d", round), Pipeline: "control", Host: host, PID: deadPID, Started: time.Now()}
	}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := launchtest.Bucket(t, out).WriteAll(context.Background(), storage.LockKey, data, nil); err != nil {
		t.Fatal(err)
	}
}

func staleKind(round int) string {
	if round%2 == 1 {
		return "a gone process of this host"
	}
	return "a day-old lock of another host"
}

// goneProcess returns the id of a process of this host that has exited.
func goneProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

var runIDLine = regexp.MustCompile(`\(run (\S+)\)`)

// TestCloudStaleLockRace: on gs:// and s3://, round after round, several control runs
// find the same stale lock of --out at once, first as goroutines of this process,
// then as processes: exactly one takes it over and runs, the others are refused
// (exit 2: the lock is in use), and the winner's run is complete (its manifest
// verified file by file) and what a file:// run publishes.
func TestCloudStaleLockRace(t *testing.T) {
	testenv.Slow(t, "a pipeline run and racing runs per round, against emulators")
	begin := time.Now()
	servers := emulators.Both(t)
	ref := outputs.Run{Out: fileLoc(t, "ref")}
	ref.Locs = map[string]string{"out": ref.Out}
	timed(t, "file:// reference", raceConfig(ref.Out))
	dead := goneProcess(t)
	const rounds, racers, procs = 6, 8, 5
	for _, s := range servers {
		t.Run(s.Scheme+"/goroutines", func(t *testing.T) {
			out := outputs.Run{Out: s.Loc("jc-test", "control/race-goroutines")}
			out.Locs = map[string]string{"out": out.Out}
			for round := range rounds {
				start := time.Now()
				staleLock(t, out.Out, round, dead)
				s.Requests()
				var mu sync.Mutex
				var done sync.WaitGroup
				finished := 0
				// The winner's run waits for the others' answers before publishing:
				// a run it released could otherwise be taken afresh.
				stages.AfterResultsWritten = func(_, _ int64) {
					for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
						mu.Lock()
						n := finished
						mu.Unlock()
						if n >= racers-1 {
							return
						}
					}
				}
				type result struct {
					err     error
					printed string
				}
				results := make([]result, racers)
				gate := make(chan struct{})
				for i := range racers {
					done.Add(1)
					go func() {
						defer done.Done()
						<-gate
						var buf bytes.Buffer
						err := run(context.Background(), raceConfig(out.Out), &buf)
						mu.Lock()
						results[i] = result{err, buf.String()}
						finished++
						mu.Unlock()
					}()
				}
				close(gate)
				done.Wait()
				stages.AfterResultsWritten = nil
				var winners []string
				takingOver := 0
				for i, r := range results {
					if r.err != nil && strings.Contains(r.err.Error(), "is taking over the stale lock") {
						takingOver++
					}
					switch {
					case r.err == nil:
						m := runIDLine.FindStringSubmatch(r.printed)
						if m == nil {
							t.Fatalf("round %d: racer %d won but printed no run id:\n%s", round, i, r.printed)
						}
						winners = append(winners, m[1])
					case !errors.Is(r.err, launch.ErrBadInput) || !strings.Contains(r.err.Error(), "is in use"):
						t.Errorf("round %d: racer %d: %v, want the lock in use (bad input)", round, i, r.err)
					}
				}
				if len(winners) != 1 {
					t.Fatalf("round %d: %d runs took the stale lock over (%v), want exactly 1", round, len(winners), winners)
				}
				if m, err := storage.VerifyManifest(context.Background(), out.Out); err != nil || m.RunID != winners[0] {
					t.Fatalf("round %d: manifest %+v, %v; want run %s's", round, m, err, winners[0])
				}
				outputs.Same(t, ref, out)
				w, refused := emulators.Conditional(s.Requests())
				t.Logf("round %d (%s): %d racers, run %s won and published; %d losers met its claim mid-takeover; %d create-if-absent requests, %d refused by the server (412); %v",
					round, staleKind(round), racers, winners[0], takingOver, w, refused, time.Since(start).Round(time.Millisecond))
			}
		})
		t.Run(s.Scheme+"/processes", func(t *testing.T) {
			out := outputs.Run{Out: s.Loc("jc-test", "control/race-processes")}
			out.Locs = map[string]string{"out": out.Out}
			for round := range rounds {
				start := time.Now()
				staleLock(t, out.Out, round, dead)
				s.Requests()
				winners := raceProcesses(t, out.Out, procs)
				if len(winners) != 1 {
					t.Fatalf("round %d: %d processes took the stale lock over (%v), want exactly 1", round, len(winners), winners)
				}
				if m, err := storage.VerifyManifest(context.Background(), out.Out); err != nil || m.RunID != winners[0] {
					t.Fatalf("round %d: manifest %+v, %v; want run %s's", round, m, err, winners[0])
				}
				outputs.Same(t, ref, out)
				w, refused := emulators.Conditional(s.Requests())
				t.Logf("round %d (%s): %d processes, run %s won and published; %d create-if-absent requests, %d refused by the server (412); %v",
					round, staleKind(round), procs, winners[0], w, refused, time.Since(start).Round(time.Millisecond))
			}
		})
	}
	t.Logf("TestCloudStaleLockRace: %v in all", time.Since(begin).Round(time.Millisecond))
}

const (
	envCloudRaceOut     = "JEMCHECK_TEST_CLOUD_RACE_OUT"
	envCloudRaceAt      = "JEMCHECK_TEST_CLOUD_RACE_AT"
	envCloudRaceRelease = "JEMCHECK_TEST_CLOUD_RACE_RELEASE"
)

// raceProcesses starts n processes (TestCloudRaceHelper) that start a control run
// into out at the same moment; the winner publishes only once the others have exited
// (the parent then creates the release file). It returns the run ids of the
// processes whose run succeeded.
func raceProcesses(t *testing.T, out string, n int) []string {
	t.Helper()
	release := filepath.Join(t.TempDir(), "release")
	at := time.Now().Add(time.Second).UnixNano()
	outs := make([]bytes.Buffer, n)
	exited := make(chan int, n)
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCloudRaceHelper$", "-test.v")
		cmd.Env = append(os.Environ(), envCloudRaceOut+"="+out, envCloudRaceAt+"="+strconv.FormatInt(at, 10), envCloudRaceRelease+"="+release)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			if err := cmd.Wait(); err != nil {
				fmt.Fprintf(&outs[i], "\nwait: %v\n", err)
			}
			exited <- i
		}()
	}
	var order []int
	timeout := time.After(2 * time.Minute)
	for len(order) < n-1 {
		select {
		case i := <-exited:
			order = append(order, i)
		case <-timeout:
			t.Errorf("only %d of %d racing processes exited in 2 minutes", len(order), n)
			order = append(order, -1)
		}
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for len(order) < n {
		order = append(order, <-exited)
	}
	var winners []string
	for i := range n {
		o := outs[i].String()
		if m := regexp.MustCompile(`RESULT won (\S+)`).FindStringSubmatch(o); m != nil {
			winners = append(winners, m[1])
		} else if !strings.Contains(o, "RESULT lost") || !strings.Contains(o, "is in use") {
			t.Errorf("process %d neither won nor was refused for the lock in use:\n%s", i, o)
		}
	}
	return winners
}

// TestCloudRaceHelper is one racing process of TestCloudStaleLockRace: at the given
// moment it runs control into the given --out; it prints "RESULT won <run id>" or
// "RESULT lost: <error>". A winner waits for the release file before publishing.
func TestCloudRaceHelper(t *testing.T) {
	out := os.Getenv(envCloudRaceOut)
	if out == "" {
		t.Skip("run by TestCloudStaleLockRace")
	}
	at, _ := strconv.ParseInt(os.Getenv(envCloudRaceAt), 10, 64)
	release := os.Getenv(envCloudRaceRelease)
	stages.AfterResultsWritten = func(_, _ int64) {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(release); err == nil {
				return
			}
		}
	}
	time.Sleep(time.Until(time.Unix(0, at)))
	var buf bytes.Buffer
	err := run(context.Background(), raceConfig(out), &buf)
	if err != nil {
		fmt.Printf("RESULT lost: %v\n", err)
		return
	}
	m := runIDLine.FindStringSubmatch(buf.String())
	if m == nil {
		fmt.Printf("RESULT error: no run id in\n%s\n", buf.String())
		return
	}
	fmt.Printf("RESULT won %s\n", m[1])
}
