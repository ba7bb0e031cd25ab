// Package pagecheck opens an HTML report in headless Chromium (through chromedp) at a
// given viewport and measures what a reader sees: the page's height, where the first
// figure starts, whether every table-of-contents link resolves and which elements are
// wider than the viewport. It is used by the report's browser test and by
// scripts/pagecheck; both need a Chromium binary (Debian package chromium).
package pagecheck

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Metrics is what Measure reads from a rendered page, in CSS pixels.
type Metrics struct {
	Width, Height int // the viewport
	PageHeight    int // document.documentElement.scrollHeight
	// FirstFigure is the top of the first <figure> (or <svg>, or figure image) on the
	// page, -1 when there is none.
	FirstFigure int
	// DetailsStart is the top of the first <details> element, -1 when there is none:
	// what comes before it is the page before its detail.
	DetailsStart int
	TOCLinks     int      // links of the table of contents (nav.toc a[href^="#"])
	Broken       []string // TOC hrefs whose id is not on the page
	Overflow     []string // elements (tag#id.class, width) wider than the viewport, body included
}

// Browser finds a Chromium binary: $CHROME_PATH, or chromium, chromium-browser,
// google-chrome on $PATH; "" when there is none.
func Browser() string {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// measureJS returns the page's metrics as JSON. A fixed element's width counts only
// when its box pokes out of the viewport; scrolling boxes (.scroll, pre) are allowed
// to hold wider content, so their descendants are not checked, only the box itself.
const measureJS = `(() => {
  const top = el => el ? Math.round(el.getBoundingClientRect().top + window.scrollY) : -1;
  const fig = document.querySelector('figure, svg, img[src$=".svg"]');
  const det = document.querySelector('details');
  const vw = document.documentElement.clientWidth;
  const links = [...document.querySelectorAll('nav.toc a[href^="#"]')];
  const broken = links.map(a => a.getAttribute('href').slice(1)).filter(id => !document.getElementById(decodeURIComponent(id)));
  const over = [];
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '');
  if (document.body.scrollWidth > vw) over.push('body (scrollWidth ' + document.body.scrollWidth + ' > ' + vw + ')');
  const walk = el => {
    for (const c of el.children) {
      const r = c.getBoundingClientRect();
      if (r.width > 0 && (r.right > vw + 1 || r.left < -1)) over.push(name(c) + ' (' + Math.round(r.left) + '..' + Math.round(r.right) + ' > ' + vw + ')');
      const st = getComputedStyle(c);
      if (st.overflowX === 'auto' || st.overflowX === 'scroll' || st.overflowX === 'hidden') continue;
      if (c.tagName === 'DETAILS' && !c.open) continue;
      walk(c);
    }
  };
  walk(document.body);
  return JSON.stringify({page: document.documentElement.scrollHeight, fig: top(fig), det: top(det),
    toc: links.length, broken, over: over.slice(0, 20)});
})()`

// Measure opens the HTML file at path in headless Chromium at width×height and
// measures it. When shot is not "", a full-page PNG screenshot is written there.
func Measure(ctx context.Context, path string, width, height int, shot string) (Metrics, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Metrics{}, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.WindowSize(width, height),
		chromedp.Flag("no-sandbox", true), // root in containers
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	if b := Browser(); b != "" {
		opts = append(opts, chromedp.ExecPath(b))
	}
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel2 := chromedp.NewContext(actx)
	defer cancel2()
	bctx, cancel3 := context.WithTimeout(bctx, 90*time.Second)
	defer cancel3()

	var raw string
	var png []byte
	actions := []chromedp.Action{
		chromedp.EmulateViewport(int64(width), int64(height)),
		chromedp.Navigate("file://" + abs),
		chromedp.WaitReady("body"),
		chromedp.Evaluate(`new Promise(r => { const imgs = [...document.images].filter(i => !i.complete);
		  if (!imgs.length) return r(true); setTimeout(() => r(true), 5000); let n = imgs.length; imgs.forEach(i => { i.onload = i.onerror = () => { if (--n === 0) r(true); }; }); })`, nil,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
		chromedp.Evaluate(measureJS, &raw),
	}
	if shot != "" {
		actions = append(actions, chromedp.FullScreenshot(&png, 100))
	}
	if err := chromedp.Run(bctx, actions...); err != nil {
		return Metrics{}, fmt.Errorf("pagecheck %s: %w", path, err)
	}
	var r struct {
		Page, Fig, Det, TOC int
		Broken, Over        []string
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Metrics{}, fmt.Errorf("pagecheck %s: %w", path, err)
	}
	if shot != "" {
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			return Metrics{}, err
		}
	}
	return Metrics{Width: width, Height: height, PageHeight: r.Page, FirstFigure: r.Fig, DetailsStart: r.Det,
		TOCLinks: r.TOC, Broken: r.Broken, Overflow: r.Over}, nil
}
