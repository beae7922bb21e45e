package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser tests drive Debian's headless Chromium (package chromium) with
// chromedp. CHROMIUM_PATH overrides where it is; without it the tests fail
// and say how to install it (they never skip). Screenshots go to
// SCREENSHOT_DIR (relative to the repository root, e.g. docs/screenshots)
// when it is set, else to a temporary directory.

// DefaultChromiumPath is where Debian's chromium package installs the browser.
const DefaultChromiumPath = "/usr/bin/chromium"

// browserStep bounds one browser action (a page load, a click, a query).
const browserStep = 30 * time.Second

// Browser is one headless Chromium tab on a test's server.
type Browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
	// Width and Height are the current viewport.
	width, height int64
}

// NewBrowser starts headless Chromium with a 1280×800 viewport for the test
// server at baseURL. The browser ends with the test.
func NewBrowser(t *testing.T, baseURL string) *Browser {
	t.Helper()
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		path = DefaultChromiumPath
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("headless Chromium is needed for the browser tests (dashboard, API reference page) and is not at %s (%v): "+
			"install Debian's chromium: apt-get install -y chromium (or set CHROMIUM_PATH)", path, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in a container
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	var (
		mu   sync.Mutex
		done bool
	)
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf("chromium: "+format, args...)
		}
	}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(logf))
	t.Cleanup(func() {
		mu.Lock()
		done = true
		mu.Unlock()
		cancel()
		cancelAlloc()
	})
	b := &Browser{t: t, ctx: ctx, base: strings.TrimRight(baseURL, "/"), width: 1280, height: 800}
	// The first action starts the browser and must not run under a timeout
	// (it would end the browser with it), so it is bounded from outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx, chromedp.EmulateViewport(b.width, b.height)) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start headless Chromium (%s): %v", path, err)
		}
	case <-time.After(2 * browserStep):
		cancel()
		t.Fatalf("headless Chromium (%s) did not start within %s", path, 2*browserStep)
	}
	b.dir = os.Getenv("SCREENSHOT_DIR")
	if b.dir == "" {
		b.dir = t.TempDir()
	} else if !filepath.IsAbs(b.dir) {
		// Tests run in integration/; the variable is relative to the root.
		b.dir = filepath.Join("..", b.dir)
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

// step runs actions under the step timeout, failing the test on error.
func (b *Browser) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %s: %v (page %s)", what, err, b.location())
	}
}

// read runs action and returns what it read, failing the test (naming
// what, and the page) when it fails or outlasts browserStep.
func (b *Browser) read(what string, action chromedp.Action[string]) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	s, err := chromedp.Run(ctx, action)
	if err != nil {
		b.t.Fatalf("browser: %s: %v (page %s)", what, err, b.location())
	}
	return s
}

// location is the current URL, for failure messages.
func (b *Browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "unknown"
	}
	return loc
}

// Open loads path and returns the HTTP status of the page.
func (b *Browser) Open(path string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.base+path))
	if err != nil {
		b.t.Fatalf("browser: open %s: %v", path, err)
	}
	return resp.Status
}

// Path is the path (and query) of the current page, read within the step
// timeout (a busy machine may take seconds to answer; location's short
// bound is for failure messages, where "unknown" will do).
func (b *Browser) Path() string {
	b.t.Helper()
	return strings.TrimPrefix(b.read("location", chromedp.Location()), b.base)
}

// SetHeader sends header name: value with every request the page makes
// from now on (navigations, scripts' fetches), e.g. an Authorization.
func (b *Browser) SetHeader(name, value string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		b.t.Fatalf("browser: enable network: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders,
		network.SetExtraHTTPHeadersParams{Headers: network.Headers{name: value}}); err != nil {
		b.t.Fatalf("browser: set header %s: %v", name, err)
	}
}

// Fill replaces the value of the input sel with value, typed as a person
// would.
func (b *Browser) Fill(sel, value string) {
	b.t.Helper()
	b.Eval(fmt.Sprintf(`document.querySelector(%q).value = ""`, sel))
	b.step("fill "+sel, chromedp.SendKeys(chromedp.CSS(sel), value))
}

// Click clicks sel without waiting for a page load.
func (b *Browser) Click(sel string) {
	b.t.Helper()
	b.step("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// Submit clicks sel (a submit button or a link), waits for the page it
// leads to (after redirects) and returns that page's HTTP status.
func (b *Browser) Submit(sel string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("browser: submit %s: %v (page %s)", sel, err, b.location())
	}
	return resp.Status
}

// WaitVisible waits until sel is on the page and visible.
func (b *Browser) WaitVisible(sel string) {
	b.t.Helper()
	b.step("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// Text returns the text of the first element matching sel.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(b.read("text of "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// Value returns the value of the input sel.
func (b *Browser) Value(sel string) string {
	b.t.Helper()
	return b.read("value of "+sel, chromedp.Value(chromedp.CSS(sel)))
}

// Has reports whether an element matches sel on the current page.
func (b *Browser) Has(sel string) bool {
	b.t.Helper()
	return b.Eval(fmt.Sprintf("document.querySelector(%q) !== null", sel)) == "true"
}

// Eval evaluates a JavaScript expression on the page and returns its value
// as a string.
func (b *Browser) Eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[any](expr))
	if err != nil {
		b.t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return fmt.Sprint(v)
}

// WaitText waits until the text of sel contains want.
func (b *Browser) WaitText(sel, want string) {
	b.t.Helper()
	deadline := time.Now().Add(browserStep)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if b.Has(sel) && strings.Contains(b.Text(sel), want) {
			return
		}
		if time.Now().After(deadline) {
			got := "(no such element)"
			if b.Has(sel) {
				got = b.Text(sel)
			}
			b.t.Fatalf("browser: %s never contained %q; it has %q (page %s)", sel, want, got, b.location())
		}
		<-tick.C
	}
}

// Viewport resizes the page's viewport (e.g. 390 wide for a phone).
func (b *Browser) Viewport(width, height int64) {
	b.t.Helper()
	b.width, b.height = width, height
	b.step("resize viewport", chromedp.EmulateViewport(width, height))
}

// Screenshot saves a full-page PNG of the current page as name.png in the
// screenshot directory and returns its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// PageLog is what the browser's tab asked for and complained about since
// Record: the URL of every request, and every error the console shows
// (Content-Security-Policy violations, failed loads, uncaught exceptions).
type PageLog struct {
	mu       sync.Mutex
	requests []string
	errors   []string
}

// Record starts a PageLog of the tab; open the page after it.
func (b *Browser) Record() *PageLog {
	b.t.Helper()
	l := &PageLog{}
	err := chromedp.Listen(b.ctx, func(ev any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			l.requests = append(l.requests, e.Request.URL)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				l.errors = append(l.errors, fmt.Sprintf("%s: %s", e.Entry.Source, e.Entry.Text))
			}
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil {
				msg += " " + x.Description
			}
			l.errors = append(l.errors, "uncaught exception: "+msg)
		}
	})
	if err != nil {
		b.t.Fatalf("browser: listen: %v", err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, browserStep)
	defer cancel()
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		b.t.Fatalf("browser: enable network events: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		b.t.Fatalf("browser: enable log events: %v", err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		b.t.Fatalf("browser: enable runtime events: %v", err)
	}
	return l
}

// Requests are the URLs the tab requested, in order.
func (l *PageLog) Requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// Errors are the console's errors, in order.
func (l *PageLog) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errors)
}
