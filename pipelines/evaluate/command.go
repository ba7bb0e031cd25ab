package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jemcheck/jemcheck/methods"
	"github.com/jemcheck/jemcheck/pipelines/internal/launch"
	"github.com/jemcheck/jemcheck/schemas"
	"github.com/jemcheck/jemcheck/storage"
	"github.com/jemcheck/jemcheck/tasks"
)

// The user's --command.
//
// The paths never become shell text: the command gets them as the environment
// variables JEMCHECK_EXPORT and JEMCHECK_LOGITS, and each placeholder {export} and
// {logits} in its text is replaced by a reference to its variable, quoted for where it
// stands ("${JEMCHECK_EXPORT}" outside quotes, ${JEMCHECK_EXPORT} inside double quotes,
// '"${JEMCHECK_EXPORT}"' inside single quotes). The shell expands a variable's value
// as data, never as code, so a folder named `x;touch PWNED;` or `x $(touch PWNED)`
// reaches the program as it is.
//
// The command runs after --out and its lock are checked (and with the lock held), in
// its own process group, for at most --command_timeout; on SIGINT or SIGTERM its
// process group is ended, the temporary folder removed, the lock released, one line
// printed, and evaluate exits 130 or 143.

const (
	envExport = "JEMCHECK_EXPORT"
	envLogits = "JEMCHECK_LOGITS"
)

// DefaultCommandTimeout is --command_timeout's default.
const DefaultCommandTimeout = time.Hour

// killGrace is how long the command's process group has, after SIGTERM, before SIGKILL.
var killGrace = 5 * time.Second

// shellCommand is the user's command with each placeholder replaced by a reference to
// its environment variable, quoted for the quoting context it stands in.
func shellCommand(template string) string {
	vars := map[string]string{"{export}": envExport, "{logits}": envLogits}
	var b strings.Builder
	const (
		plain = iota
		single
		double
	)
	state := plain
	for i := 0; i < len(template); i++ {
		c := template[i]
		if c == '{' {
			matched := false
			for ph, v := range vars {
				if strings.HasPrefix(template[i:], ph) {
					switch state {
					case plain:
						b.WriteString(`"${` + v + `}"`)
					case double:
						b.WriteString(`${` + v + `}`)
					case single:
						b.WriteString(`'"${` + v + `}"'`)
					}
					i += len(ph) - 1
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		b.WriteByte(c)
		switch {
		case state == plain && c == '\\' && i+1 < len(template):
			i++
			b.WriteByte(template[i])
		case state == double && c == '\\' && i+1 < len(template):
			i++
			b.WriteByte(template[i])
		case state == plain && c == '\'':
			state = single
		case state == single && c == '\'':
			state = plain
		case state == plain && c == '"':
			state = double
		case state == double && c == '"':
			state = plain
		}
	}
	return b.String()
}

// commandRun is a finished command's logits and what to clean up.
type commandRun struct {
	dir    string // the temporary folder
	logits string // the logits file the command wrote
}

func (r *commandRun) cleanup() { os.RemoveAll(r.dir) }

// runCommandChecked checks --out as the run will (with the external model the command
// is expected to give), takes --out's lock, and runs the command while holding it; the
// lock is released before the run takes it again.
//
// A dry run (--dry_run) runs no command: it makes the checks and returns nil, nil.
func runCommandChecked(ctx context.Context, c Config, p tasks.Point, compare []string) (ran *commandRun, err error) {
	if c.CommandTimeout < 0 || c.CommandTimeout == 0 && launch.Given("command_timeout") {
		return nil, launch.BadInput("command_timeout: %v: give how long the command may run, a positive duration such as 30m or 2h (default %v)",
			c.CommandTimeout, DefaultCommandTimeout)
	}
	pre, err := readConfig(ctx, c.From)
	if err != nil {
		return nil, err
	}
	pre.Points[0].Methods = append(append([]string(nil), compare...), methods.ExternalMethod(c.Model))
	pre.Pipeline, pre.Runner, pre.Overwrite = "evaluate", launch.RunnerName(), c.Overwrite
	pre.Options.Out, pre.Options.Logits, pre.Options.LogitsModel = c.Out, "", c.Model
	pre.Options.WriteSamples = false
	pre.Inputs = []string{c.From}
	if err := launch.Prepare(ctx, &pre); err != nil {
		return nil, err
	}
	if dryRun() {
		// Prepare made a dry run's checks (read only); the user's command does work
		// (trains, writes), so a dry run never runs it, and takes no lock.
		fmt.Fprintf(c.Stdout, "evaluate: dry run: --command %s was not run; the checks passed; nothing submitted or written\n",
			methods.Quote(c.Command))
		return nil, nil
	}
	createdOut := ""
	if dir, ok := storage.LocalDir(c.Out); ok {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			createdOut = dir
		}
	}
	host, _ := os.Hostname()
	note, err := storage.AcquireLock(ctx, c.Out, storage.LockInfo{RunID: pre.RunID, Pipeline: "evaluate",
		Host: host, PID: os.Getpid(), Started: time.Now().UTC()})
	if le, ne := (*storage.LockedError)(nil), (*storage.NoExclusiveCreateError)(nil); errors.As(err, &le) || errors.As(err, &ne) {
		return nil, launch.BadInput("%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("lock --out %s: %w", c.Out, err)
	}
	if note != "" {
		fmt.Fprintf(c.Stdout, "evaluate: %s\n", note)
	}
	release := func() {
		actx := context.WithoutCancel(ctx)
		if err := storage.ReleaseLock(actx, c.Out, pre.RunID); err != nil {
			fmt.Fprintf(c.Stdout, "evaluate: could not release the lock of %s: %v\n", c.Out, err)
		}
		if createdOut != "" {
			os.Remove(createdOut) // only if empty: the lock made it
		}
	}
	defer release()
	dir, err := os.MkdirTemp("", "jemcheck-logits-")
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	ran = &commandRun{dir: dir, logits: filepath.Join(dir, "logits.csv")}
	if err := runCommand(ctx, c, ran, release); err != nil {
		ran.cleanup()
		return nil, err
	}
	return ran, nil
}

// dryRun reports whether --dry_run is set (Beam's flag: a Dataflow dry run; Prepare
// refuses it on runners that have none).
func dryRun() bool {
	f := flag.Lookup("dry_run")
	return f != nil && f.Value.String() == "true"
}

// exitFunc ends the process after a signal (tests replace it).
var exitFunc = os.Exit

// runCommand runs the user's command, which writes its logits to ran.logits, with the
// timeout and the signal handling described above; release gives --out's lock back.
//
// Whatever way the shell ends (it exits, it overruns the timeout, evaluate gets a
// signal, ctx ends), the command's process group is ended before runCommand returns:
// SIGTERM, then SIGKILL to whatever of it is left after killGrace, and evaluate waits
// until none of it is running (endGroup). A background child of a command that
// succeeded is ended too, and one that ignores SIGTERM gets the SIGKILL. (A process
// that leaves the group, by setsid or setpgid, is out of evaluate's reach.)
func runCommand(ctx context.Context, c Config, ran *commandRun, release func()) error {
	export := c.From
	if dir, ok := storage.LocalDir(c.From); ok {
		export = dir // absolute
	}
	timeout := c.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	line := shellCommand(c.Command)
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = append(os.Environ(), envExport+"="+export, envLogits+"="+ran.logits)
	// The command's output goes to c.Stdout: directly when it is a file (a terminal
	// stays a terminal to the user's program), else through a pipe evaluate copies,
	// so that the shell's exit is seen at once even while a background child of it
	// holds the output open.
	var copied chan struct{}
	var pr, pw *os.File
	if f, ok := c.Stdout.(*os.File); ok {
		cmd.Stdout, cmd.Stderr = f, f
	} else {
		var err error
		if pr, pw, err = os.Pipe(); err != nil {
			return fmt.Errorf("command: %w", err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: ended as a whole
	fmt.Fprintf(c.Stdout, "evaluate: running %s (%s=%s, %s=%s, timeout %v)\n", c.Command,
		envExport, methods.Quote(export), envLogits, methods.Quote(ran.logits), timeout)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	err := cmd.Start()
	if pw != nil {
		pw.Close() // the command holds its own copy
		if err == nil {
			copied = make(chan struct{})
			go func() {
				io.Copy(c.Stdout, pr)
				close(copied)
			}()
		} else {
			pr.Close()
		}
	}
	if err != nil {
		return launch.BadInput("command %s could not start: %v", methods.Quote(c.Command), err)
	}
	pgid := cmd.Process.Pid
	// finish waits for the command's output to end once its group is gone (bounded: a
	// process that left the group may hold it open).
	finish := func() {
		if copied == nil {
			return
		}
		select {
		case <-copied:
		case <-time.After(time.Second):
			pr.Close()
			<-copied
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// interrupted ends the run after SIGINT or SIGTERM, the command's group ended:
	// remove the temporary folder, give the lock back, say so in one line, and exit as
	// the shell would (130, 143).
	interrupted := func(sig os.Signal) error {
		ran.cleanup()
		release()
		name, code := "SIGINT", 130
		if sig == syscall.SIGTERM {
			name, code = "SIGTERM", 143
		}
		fmt.Fprintf(os.Stderr, "evaluate: interrupted by %s while the command ran: it was stopped (process group %d), "+
			"its temporary folder removed; nothing was written to %s\n", name, pgid, c.Out)
		exitFunc(code)
		return fmt.Errorf("interrupted by %s", name) // tests: exitFunc returns
	}
	var timedOut bool
	select {
	case err = <-done:
		// The shell has exited; what it left running in its group is ended. The note
		// is written once the copy of the command's output has ended: the two must not
		// write to c.Stdout at once (a bytes.Buffer's ReadFrom, blocked in a read, would
		// cut the note off when it returns).
		n := endGroup(pgid, nil)
		finish()
		if n > 0 {
			fmt.Fprintf(c.Stdout, "evaluate: the command's shell exited, but %d process(es) it started were still running "+
				"in its process group %d: ended them\n", n, pgid)
		}
	case <-timer.C:
		timedOut = true
		endGroup(pgid, nil)
		err = <-done
		finish()
	case <-ctx.Done():
		endGroup(pgid, nil)
		<-done
		finish()
		return fmt.Errorf("command %s stopped: %w", methods.Quote(c.Command), ctx.Err())
	case sig := <-sigs:
		// A second signal while the group ends sends its SIGKILL at once.
		endGroup(pgid, sigs)
		<-done
		finish()
		return interrupted(sig)
	}
	select {
	case sig := <-sigs: // it came while the group was being ended
		return interrupted(sig)
	default:
	}
	if timedOut {
		return launch.BadInput("command %s did not finish within --command_timeout=%v: it was stopped (raise --command_timeout for longer training)",
			methods.Quote(c.Command), timeout)
	}
	if err != nil {
		return launch.BadInput("command %s failed: %v", methods.Quote(c.Command), err)
	}
	if _, err := os.Stat(ran.logits); err != nil {
		return launch.BadInput("command %s wrote no logits to $%s (%s)", methods.Quote(c.Command), envLogits, ran.logits)
	}
	return nil
}

// endGroup ends the process group pgid and returns once none of it is running: it
// sends SIGTERM, waits up to killGrace for the group to exit, then sends SIGKILL to
// whatever is left and waits for that (a signal on hurry sends the SIGKILL at once).
// It returns how many of the group's processes were running when it was called (0:
// nothing to end, and nothing is sent).
func endGroup(pgid int, hurry <-chan os.Signal) int {
	n := groupRunning(pgid)
	if n == 0 {
		return 0
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.NewTimer(killGrace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for groupRunning(pgid) > 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			break wait
		case <-hurry:
			break wait
		}
	}
	for i := 0; groupRunning(pgid) > 0 && i < 500; i++ { // SIGKILL cannot be ignored: at most a moment
		syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// groupRunning counts the processes of the process group pgid that are running (a
// zombie, dead and waiting to be reaped by its parent, does not count). Without /proc
// it is 1 while kill(2) can reach the group, else 0.
func groupRunning(pgid int) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		if syscall.Kill(-pgid, 0) == nil {
			return 1
		}
		return 0
	}
	n := 0
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err != nil || pid <= 0 {
			continue
		}
		if state, pg, ok := procStat(e.Name()); ok && pg == pgid && state != 'Z' && state != 'X' {
			n++
		}
	}
	return n
}

// procStat reads the state and process group of /proc/<pid>/stat.
func procStat(pid string) (state byte, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}

// logitsSHA256 is the sha256 of each logits file, by file, read within the logits
// file's size limit.
func logitsSHA256(ctx context.Context, files []string) (map[string]string, error) {
	sums := map[string]string{}
	for _, f := range files {
		o, err := storage.OpenObject(ctx, f, schemas.MaxLogitsBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		h := sha256.New()
		_, err = io.Copy(h, o)
		o.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		sums[f] = hex.EncodeToString(h.Sum(nil))
	}
	return sums, nil
}
