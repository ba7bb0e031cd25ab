// Command pagecheck opens reports in headless Chromium at 1280×800 and prints, per
// report, its page height, the first figure's top, the first collapsed detail's top,
// the table of contents' links (and any that do not resolve) and the elements wider
// than the viewport; with -shots=DIR it writes a full-page screenshot of each.
//
//	go run ./scripts/pagecheck -shots=/tmp/shots /tmp/r-control/report.html /tmp/r-2d/report.html
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jemcheck/jemcheck/internal/pagecheck"
)

func main() {
	width := flag.Int("width", 1280, "viewport width (CSS px)")
	height := flag.Int("height", 800, "viewport height (CSS px)")
	shots := flag.String("shots", "", "folder for full-page PNG screenshots (none when empty)")
	flag.Parse()
	if pagecheck.Browser() == "" {
		fmt.Fprintln(os.Stderr, "pagecheck: no chromium on PATH (apt-get install chromium, or set CHROME_PATH)")
		os.Exit(2)
	}
	status := 0
	for _, p := range flag.Args() {
		shot := ""
		if *shots != "" {
			if err := os.MkdirAll(*shots, 0o755); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			shot = filepath.Join(*shots, strings.ReplaceAll(strings.Trim(filepath.Dir(p), "/."), "/", "_")+".png")
		}
		m, err := pagecheck.Measure(context.Background(), p, *width, *height, shot)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			status = 2
			continue
		}
		fmt.Printf("%s: page %d px (%.1f screens), first figure at %d px, first collapsed detail at %d px, %d TOC links, %d broken %v, %d overflowing %v%s\n",
			p, m.PageHeight, float64(m.PageHeight)/float64(m.Height), m.FirstFigure, m.DetailsStart, m.TOCLinks, len(m.Broken), m.Broken, len(m.Overflow), m.Overflow,
			map[bool]string{true: ", screenshot " + shot, false: ""}[shot != ""])
	}
	os.Exit(status)
}
