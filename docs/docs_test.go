// Package docs holds jemcheck's user documentation (Markdown); its test keeps the
// README's and the docs' links true and their prose free of tracker numbers and
// session talk.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headRE   = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
	trackRE  = regexp.MustCompile(`(?i)\(issues? \d+\)|\bissue \d+\b`)
	sessRE   = regexp.MustCompile(`(?i)this session|in this session|not completed|this version|the previous version`)
	fenceRE  = regexp.MustCompile("(?s)```.*?```")
	anchorRE = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchor is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as
// hyphens.
func anchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.NewReplacer("`", "", "*", "").Replace(h)
	h = anchorRE.ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// TestDocs: every relative link of README.md and docs/*.md names a file that exists
// and, with a #fragment, a heading of it; no page carries a tracker number or session
// talk; the README stays within 200 lines.
func TestDocs(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../README.md")
	anchors := map[string]map[string]bool{}
	heads := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		a := map[string]bool{}
		for _, m := range headRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(string(raw), ""), -1) {
			a[anchor(m[1])] = true
		}
		anchors[path] = a
		return a
	}
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := fenceRE.ReplaceAllString(string(raw), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: no such file", page, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !heads(path)[frag] {
				t.Errorf("%s: link %s: no heading #%s in %s", page, target, frag, path)
			}
		}
		if loc := trackRE.FindStringIndex(text); loc != nil {
			t.Errorf("%s: a tracker number: %q", page, text[loc[0]:loc[1]])
		}
		if loc := sessRE.FindStringIndex(text); loc != nil {
			t.Errorf("%s: session talk: %q", page, text[loc[0]:loc[1]])
		}
	}
	raw, _ := os.ReadFile("../README.md")
	if n := strings.Count(string(raw), "\n"); n > 200 {
		t.Errorf("README.md has %d lines, over 200", n)
	}
}
