package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// signalGrace is how long a stopped run's own failure path (the runner returning on
// the cancelled context, then abort) may take before the signal handler cleans up
// itself.
var signalGrace = 20 * time.Second

// watchSignals makes SIGINT and SIGTERM stop the run cleanly once it holds --out's lock:
// the run's context is cancelled, its staging folder kept with its complete blocks for
// --resume (removed when none is complete; kept as well if its commit had begun, for the
// next run to finish: keepForResume), the lock released, one line says what was kept and
// what --out holds (verified), and the process exits 130 (SIGINT) or 143 (SIGTERM). A second signal
// exits at once. Execute defers the returned stop, which, after a signal, waits for
// the handler (that exits the process).
func (c *Config) watchSignals(ctx context.Context) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := handleSignals(ctx, sigs, signalGrace, func(sig os.Signal) int { return c.interrupted(os.Stderr, sig) }, os.Exit)
	return ctx, func() {
		stop()
		signal.Stop(sigs)
	}
}

// interrupted cleans up after a signal and returns the exit status.
func (c *Config) interrupted(errw io.Writer, sig os.Signal) int {
	if !workersInProcess(c.Runner) {
		// The job may go on elsewhere: its staging and lock are its own until it ends.
		fmt.Fprintf(errw, "%s: stopped by %s: stopped waiting for the job on %s, which may still be running: it publishes "+
			"into %s and releases the lock itself when it ends (its staging folder and lock were left in place)\n",
			c.Pipeline, signalName(sig), c.Runner, c.Options.Out)
		return exitStatus(sig)
	}
	line := ""
	if c.stop != nil {
		line = c.stop.get() // the run returned and ended itself (Execute)
	}
	if line == "" { // the run did not return within the grace period
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		line = c.keepForResume(ctx)
	}
	fmt.Fprintf(errw, "%s: interrupted by %s: %s\n", c.Pipeline, signalName(sig), line)
	return exitStatus(sig)
}

func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// exitStatus is the shell's status for a process ended by sig: 128 + its number.
func exitStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// handleSignals returns ctx cancelled on the first signal from sigs, and a stop for
// the end of the run. After a signal, the handler waits for stop (the run returned)
// or for grace, runs cleanup and exits with its status; a second signal exits with its
// status at once. stop, after a signal, waits until exit has been called (for ever,
// with os.Exit); without one, it ends the handler.
func handleSignals(ctx context.Context, sigs <-chan os.Signal, grace time.Duration, cleanup func(os.Signal) int, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu       sync.Mutex
		signaled bool                  // a signal is being handled
		stopped  bool                  // the run returned first: a late signal is left to it
		returned = make(chan struct{}) // closed by stop
		exited   = make(chan struct{}) // closed once exit was called
		once     sync.Once
	)
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-returned:
			return
		}
		mu.Lock()
		signaled = !stopped
		mu.Unlock()
		if !signaled {
			return
		}
		cancel()
		go func() {
			if s, ok := <-sigs; ok {
				exit(exitStatus(s))
			}
		}()
		select {
		case <-returned:
		case <-time.After(grace):
		}
		exit(cleanup(sig))
		close(exited)
	}()
	return ctx, func() {
		mu.Lock()
		stopped = true
		s := signaled
		mu.Unlock()
		once.Do(func() { close(returned) })
		if s {
			<-exited
		}
		cancel()
	}
}
