package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadSmallRefusesSpecialFiles: --picks (and any small input read with readSmall) is
// checked before it is opened: a FIFO (which would hang the open) and /dev/zero (which
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
			data, err := readSmall(ctx, tt.loc)
			if tt.want == "" {
				if err != nil || string(data) != `{"picks":{}}` {
					t.Fatalf("readSmall = %q, %v", data, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || ctx.Err() != nil {
				t.Fatalf("readSmall(%s) = %v, want a prompt refusal naming %q", tt.loc, err, tt.want)
			}
			t.Logf("refused: %v", err)
		})
	}
}
