package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
func runCommandChecked(ctx context.Context, c Config, p tasks.Point, compare []string) (ran *commandRun, err error) {
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
	createdOut := ""
	if dir, ok := storage.LocalDir(c.Out); ok {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			createdOut = dir
		}
	}
	host, _ := os.Hostname()
	note, err := storage.AcquireLock(ctx, c.Out, storage.LockInfo{RunID: pre.RunID, Pipeline: "evaluate",
		Host: host, PID: os.Getpid(), Started: time.Now().UTC()})
	if le := (*storage.LockedError)(nil); errors.As(err, &le) {
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

// exitFunc ends the process after a signal (tests replace it).
var exitFunc = os.Exit

// runCommand runs the user's command, which writes its logits to ran.logits, with the
// timeout and the signal handling described above; release gives --out's lock back.
func runCommand(ctx context.Context, c Config, ran *commandRun, release func()) error {
	export := c.From
	if dir, ok := storage.LocalDir(c.From); ok {
		export = dir // absolute
	}
	timeout := c.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	line := shellCommand(c.Command)
	cmd := exec.CommandContext(cctx, "sh", "-c", line)
	cmd.Env = append(os.Environ(), envExport+"="+export, envLogits+"="+ran.logits)
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: ended as a whole
	cmd.Cancel = func() error { return endGroup(cmd.Process.Pid) }
	cmd.WaitDelay = killGrace + time.Second
	fmt.Fprintf(c.Stdout, "evaluate: running %s (%s=%s, %s=%s, timeout %v)\n", c.Command,
		envExport, methods.Quote(export), envLogits, methods.Quote(ran.logits), timeout)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return launch.BadInput("command %s could not start: %v", methods.Quote(c.Command), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case sig := <-sigs:
		// End the command's group, remove the temporary folder, give the lock back,
		// say so in one line, and exit as the shell would (130, 143).
		endGroup(cmd.Process.Pid)
		select {
		case <-done:
		case <-time.After(killGrace + time.Second):
		}
		ran.cleanup()
		release()
		name, code := "SIGINT", 130
		if sig == syscall.SIGTERM {
			name, code = "SIGTERM", 143
		}
		fmt.Fprintf(os.Stderr, "evaluate: interrupted by %s while the command ran: it was stopped (process group %d), "+
			"its temporary folder removed; nothing was written to %s\n", name, cmd.Process.Pid, c.Out)
		exitFunc(code)
		return fmt.Errorf("interrupted by %s", name) // tests: exitFunc returns
	}
	if cctx.Err() == context.DeadlineExceeded {
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

// endGroup sends SIGTERM to the process group pgid, and SIGKILL after killGrace to
// whatever of it is left.
func endGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGTERM)
	time.AfterFunc(killGrace, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
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
