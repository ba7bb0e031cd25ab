package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/internal/testenv"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
)

// running reports whether the process pid is running: it exists and is not a zombie
// (dead, waiting for its parent to reap it), read from /proc where there is one.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err) // no /proc: kill(2) reached it
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z' && b[i+2] != 'X'
}

// readPIDs reads the pid files of a test's command (one pid each); a missing file is
// an error: the command did not get as far as starting that child.
func readPIDs(t *testing.T, files []string) []int {
	t.Helper()
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("the command did not record its child: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			t.Fatalf("%s: %q is not a pid", f, b)
		}
		pids = append(pids, pid)
	}
	return pids
}

// killLeft kills (as the test's own cleanup) and reports the pids still running.
func killLeft(pids []int) []int {
	var left []int
	for _, pid := range pids {
		if running(pid) {
			left = append(left, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return left
}

// The children a test command starts, each writing its own pid to a file in dir
// (the command waits until it has, so that none is ended before it is recorded).
const (
	// a child that ends on SIGTERM
	plainChild = `sleep 100 & echo $! > "$D/plain.pid"; `
	// a child that ignores SIGTERM (the disposition survives exec)
	stubbornChild = `sh -c 'trap "" TERM; echo $$ > "$D/stubborn.pid"; exec sleep 100' & ` +
		`while [ ! -s "$D/stubborn.pid" ]; do sleep 0.01; done; `
	writeLogits = `echo x > "$JEMCHECK_LOGITS"; `
)

// TestCommandGroupEnded: however the command's shell ends, nothing of its process
// group is left running when runCommand returns: a background child of a command that
// succeeded or failed is ended, a child that ignores SIGTERM gets SIGKILL after the
// grace period, on a timeout and on a signal to evaluate too. (Review findings: a
// TERM-ignoring child outlived --command_timeout and SIGTERM, the promised SIGKILL
// never came; a successful command's background child was never ended.)
func TestCommandGroupEnded(t *testing.T) {
	defer func(g time.Duration) { killGrace = g }(killGrace)
	killGrace = 300 * time.Millisecond
	cases := []struct {
		name     string
		script   string
		pids     []string
		timeout  time.Duration
		signal   syscall.Signal // sent to this process once every child is recorded
		want     string         // in the error; "" for success
		wantNote string         // in the output
		grace    bool           // the SIGKILL is needed: it takes killGrace at least
		file     bool           // the output goes to a file (as evaluate's stderr), not through evaluate's pipe
	}{
		{"success, background child", plainChild + writeLogits, []string{"plain"}, 0, 0, "",
			"1 process(es) it started were still running", false, false},
		{"success, background child, output to a file", plainChild + writeLogits, []string{"plain"}, 0, 0, "",
			"1 process(es) it started were still running", false, true},
		{"success, background child ignoring SIGTERM", stubbornChild + plainChild + writeLogits, []string{"stubborn", "plain"}, 0, 0, "",
			"process(es) it started were still running", true, false},
		{"success, nothing left", writeLogits, nil, 0, 0, "", "", false, false},
		{"failure, background child", plainChild + "exit 3", []string{"plain"}, 0, 0, "exit status 3", "", false, false},
		{"timeout, child ignoring SIGTERM", stubbornChild + plainChild + "sleep 100", []string{"stubborn", "plain"},
			700 * time.Millisecond, 0, "did not finish within --command_timeout=700ms: it was stopped", "", true, true},
		{"timeout, child ignoring SIGTERM, output through a pipe", stubbornChild + plainChild + "sleep 100", []string{"stubborn", "plain"},
			700 * time.Millisecond, 0, "did not finish within --command_timeout=700ms: it was stopped", "", true, false},
		{"SIGTERM, child ignoring SIGTERM", stubbornChild + plainChild + `touch "$D/ready"; sleep 100`, []string{"stubborn", "plain"},
			0, syscall.SIGTERM, "interrupted by SIGTERM", "", true, true},
		{"SIGINT, children", plainChild + `touch "$D/ready"; wait`, []string{"plain"},
			0, syscall.SIGINT, "interrupted by SIGINT", "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("D", dir)
			var pidFiles []string
			for _, p := range c.pids {
				pidFiles = append(pidFiles, filepath.Join(dir, p+".pid"))
			}
			ran := &commandRun{dir: filepath.Join(dir, "tmp"), logits: filepath.Join(dir, "logits.csv")}
			os.Mkdir(ran.dir, 0o755)
			// Output to a buffer goes through evaluate's pipe, held open by the children;
			// to a file, as evaluate's stderr, directly.
			var out bytes.Buffer
			var w io.Writer = &out
			if c.file {
				f, err := os.Create(filepath.Join(dir, "output"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				w = f
			}
			released := false
			exited := -1
			var leftAtExit []int
			defer func(f func(int)) { exitFunc = f }(exitFunc)
			exitFunc = func(code int) {
				exited = code
				// evaluate exits here: the command's group must be gone already.
				for _, pid := range readPIDs(t, pidFiles) {
					if running(pid) {
						leftAtExit = append(leftAtExit, pid)
					}
				}
			}
			if c.signal != 0 {
				go func() {
					for i := 0; i < 500; i++ {
						if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
							syscall.Kill(os.Getpid(), c.signal)
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
			}
			start := time.Now()
			err := runCommand(context.Background(), Config{From: dir, Command: c.script, CommandTimeout: c.timeout, Out: filepath.Join(dir, "out"),
				Stdout: w}, ran, func() { released = true })
			took := time.Since(start)
			if c.file {
				b, _ := os.ReadFile(filepath.Join(dir, "output"))
				out.Write(b)
			}
			pids := readPIDs(t, pidFiles)
			if left := killLeft(pids); len(left) > 0 {
				t.Errorf("processes %v of the command's group outlived runCommand (of %v)\n%s", left, pids, out.String())
			}
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v\n%s", err, out.String())
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want %q\n%s", err, c.want, out.String())
			}
			if !strings.Contains(out.String(), c.wantNote) {
				t.Errorf("output lacks %q:\n%s", c.wantNote, out.String())
			}
			if c.signal != 0 {
				if want := 128 + int(c.signal); exited != want || !released {
					t.Errorf("exit %d and lock released %v, want %d and true", exited, released, want)
				}
				if len(leftAtExit) > 0 {
					t.Errorf("processes %v still ran when evaluate exited", leftAtExit)
				}
				if _, err := os.Stat(ran.dir); !os.IsNotExist(err) {
					t.Errorf("temporary folder left: %v", err)
				}
			}
			if c.grace && took < killGrace {
				t.Errorf("took %v, less than the grace period %v: the SIGTERM-ignoring child cannot have been killed", took, killGrace)
			}
			if took > killGrace+5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

// setFlag sets the registered flag name to value until t ends.
func setFlag(t *testing.T, name, value string) {
	t.Helper()
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("flag --%s is not registered", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Value.Set(old) })
}

// TestCommandDryRun: --dry_run never runs the user's command (it ran, and took and
// released --out's lock): on Dataflow the checks are made and nothing is run or
// written; on a runner without a dry run it is refused before anything.
func TestCommandDryRun(t *testing.T) {
	from := writeFrom(t, tablePoint())
	cases := []struct {
		name, runner, want string // want: "" for success, else in the error
	}{
		{"dataflow", "dataflow", ""},
		{"prism", "prism", "dry_run: the prism runner cannot describe a job"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			setFlag(t, "runner", c.runner)
			setFlag(t, "dry_run", "true")
			marker, out := filepath.Join(tmp, "ran"), filepath.Join(tmp, "out")
			var buf bytes.Buffer
			err := run(context.Background(), Config{From: from, Command: "touch " + marker, Out: out, Methods: "baseline,jem",
				Model: "external", Stdout: &buf}, &buf)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v\n%s", err, buf.String())
			case c.want != "" && (!errors.Is(err, launch.ErrBadInput) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want bad input with %q\n%s", err, c.want, buf.String())
			case c.want == "" && !strings.Contains(buf.String(), "was not run"):
				t.Errorf("the output does not say the command was not run:\n%s", buf.String())
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command ran")
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("--out %s was created: %v", out, err)
			}
		})
	}
}

// TestCommandTimeoutFlag: --command_timeout must be a positive duration: a negative one
// (which meant the 1 h default) and 0 are refused before anything runs, exit 2, one
// line naming the flag.
func TestCommandTimeoutFlag(t *testing.T) {
	testenv.Slow(t, "evaluate started as a process per case")
	from := writeFrom(t, tablePoint())
	cases := []struct {
		name, value, want string
	}{
		{"negative", "-1s", "command_timeout: -1s: give how long the command may run"},
		{"zero", "0", "command_timeout: 0s: give how long the command may run"},
		{"negative hours", "-2h", "command_timeout: -2h0m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			marker, out := filepath.Join(tmp, "ran"), filepath.Join(tmp, "out")
			script := filepath.Join(tmp, "train.sh")
			os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), launchtest.EnvArgs+"=--from="+from+" --command="+script+" --command_timeout="+c.value+" --out="+out)
			msg, err := cmd.CombinedOutput()
			if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(msg), c.want) {
				t.Errorf("%v, want exit 2 with %q:\n%s", err, c.want, msg)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the command ran")
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("--out %s was created: %v", out, err)
			}
		})
	}
}

// TestCommandSignalStubbornChild: evaluate as a process, its command's child ignoring
// SIGTERM; a SIGTERM to evaluate ends that child too (with SIGKILL after the 5 s grace
// period) before evaluate exits 143. Before, evaluate exited at once and the SIGKILL
// timer died with it: the child ran on, re-parented to init.
func TestCommandSignalStubbornChild(t *testing.T) {
	testenv.Slow(t, "evaluate as a process, and the 5 s grace period")
	from := writeFrom(t, tablePoint())
	tmp := t.TempDir()
	script := filepath.Join(tmp, "train.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nexport D="+tmp+"\n"+stubbornChild+plainChild+"wait\n"), 0o755)
	out := filepath.Join(tmp, "out")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), launchtest.EnvArgs+"=--from="+from+" --command="+script+" --out="+out, "TMPDIR="+tmp)
	// Its output to a file: a pipe would be held open by the children, and Wait would
	// wait for them.
	logf, err := os.Create(filepath.Join(tmp, "evaluate.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) // if the test stops early
	var msg bytes.Buffer
	files := []string{filepath.Join(tmp, "stubborn.pid"), filepath.Join(tmp, "plain.pid")}
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(files[1]); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the pid written in full
	pids := readPIDs(t, files)
	cmd.Process.Signal(syscall.SIGTERM)
	start := time.Now()
	err = cmd.Wait()
	left := killLeft(pids)
	b, _ := os.ReadFile(logf.Name())
	msg.Write(b)
	if took := time.Since(start); took > killGrace+5*time.Second {
		t.Errorf("evaluate took %v to exit after SIGTERM", took)
	}
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Errorf("%v, want exit 143\n%s", err, msg.String())
	}
	if len(left) > 0 {
		t.Errorf("processes %v of the command's group outlived evaluate\n%s", left, msg.String())
	}
}
