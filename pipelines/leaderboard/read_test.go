package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jemcheck/jemcheck/pipelines/internal/launchtest"
	"github.com/jemcheck/jemcheck/storage"
)

// TestReadSmallRefusesSpecialFiles: --picks (read with storage.ReadSmall) is checked
// before it is opened: a FIFO (which would hang the open) and /dev/zero (which
// would fill memory) are refused at once by name; a regular file is read.
func TestReadSmallRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "picks.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	plain := filepath.Join(dir, "picks.json")
	if err := os.WriteFile(plain, []byte(`{"picks":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, loc, want string }{
		{"fifo", fifo, "picks.fifo"},
		{"dev zero", "/dev/zero", "zero"},
		{"regular", plain, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			data, err := storage.ReadSmall(ctx, tt.loc, storage.MaxMetadataBytes)
			if tt.want == "" {
				if err != nil || string(data) != `{"picks":{}}` {
					t.Fatalf("ReadSmall = %q, %v", data, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || ctx.Err() != nil {
				t.Fatalf("ReadSmall(%s) = %v, want a prompt refusal naming %q", tt.loc, err, tt.want)
			}
			t.Logf("refused: %v", err)
		})
	}
}

func TestMain(m *testing.M) { launchtest.Main(m, "leaderboard", main) }

// TestHelpExitsZero: leaderboard --help prints the usage and every flag and exits 0; no
// verb exits 2 with the usage line and where the flags are.
func TestHelpExitsZero(t *testing.T) {
	for _, tt := range []struct {
		args string
		code int
		want string
	}{{"--help", 0, "-picks string"}, {"-h", 0, "-board string"}, {"nope", 2, "leaderboard --help for the flags"}} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), launchtest.EnvArgs+"="+tt.args)
		msg, err := cmd.CombinedOutput()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != tt.code || !strings.Contains(string(msg), tt.want) || !strings.Contains(string(msg), "usage: leaderboard pick") {
			t.Errorf("leaderboard %s: exit %d, output\n%s\nwant exit %d and %q", tt.args, code, msg, tt.code, tt.want)
		}
	}
}
