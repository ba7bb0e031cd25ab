package render

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jemcheck/jemcheck/internal/pagecheck"
	"github.com/jemcheck/jemcheck/internal/testenv"
)

// TestBrowser renders the reports of a one-point table run, a sweep and a 2-D run,
// opens each in headless Chromium at 1280×800 and checks what a reader sees first: the
// first figure starts in the first screen, every table-of-contents link resolves to an
// element, no element is wider than the viewport, and the page before its first
// collapsed detail is at most three screens. The full-page screenshots are kept in
// $JEMCHECK_ARTEFACTS/browser when that is set, else in the test's temporary folder
// (logged). Slow (starts Chromium): JEMCHECK_SLOW=1; skipped without a Chromium binary.
func TestBrowser(t *testing.T) {
	testenv.Slow(t, "starts headless Chromium")
	if pagecheck.Browser() == "" {
		t.Skip("no chromium on PATH (Debian: apt-get install chromium; or set CHROME_PATH): the browser checks did not run")
	}
	shots := t.TempDir()
	if dir := os.Getenv("JEMCHECK_ARTEFACTS"); dir != "" {
		shots = filepath.Join(dir, "browser")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", shots)
	const width, height = 1280, 800
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"control", singleInput()},
		{"sweep", sweepInput()},
		{"2d", input2D()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for name, b := range out {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := pagecheck.Measure(context.Background(), filepath.Join(dir, "report.html"), width, height, filepath.Join(shots, tc.name+".png"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("page %d px, first figure at %d px, first detail at %d px, %d TOC links", m.PageHeight, m.FirstFigure, m.DetailsStart, m.TOCLinks)
			if m.FirstFigure < 0 || m.FirstFigure >= height {
				t.Errorf("first figure at %d px, want in the first screen (< %d)", m.FirstFigure, height)
			}
			if m.TOCLinks == 0 {
				t.Error("no table of contents")
			}
			if len(m.Broken) > 0 {
				t.Errorf("TOC links to missing ids: %v", m.Broken)
			}
			if len(m.Overflow) > 0 {
				t.Errorf("elements wider than the %d px viewport: %v", width, m.Overflow)
			}
			if m.DetailsStart > 3*height {
				t.Errorf("first collapsed detail at %d px, want within three screens (%d)", m.DetailsStart, 3*height)
			}
		})
	}
}
