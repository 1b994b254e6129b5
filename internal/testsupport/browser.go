package testsupport

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser starts a private headless Chromium (Debian's, with a new empty
// profile and no background networking: the machine has no network but
// loopback) and returns a chromedp context of one tab, bounded by timeout.
// Any JavaScript exception or console error in a page fails t; Chromium is
// stopped when t ends.
func Browser(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	Need(t, "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath("chromium"),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, timeout)
	var mu sync.Mutex
	var problems []string
	// Exceptions, console errors and the browser's own errors (a refused
	// script, a CSP violation, a 404 asset) all fail the test.
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s: %s (%s:%d)", m.Type, m.Text, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(ctx); err != nil {
		cancelTime()
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("in the browser: %s", p)
		}
	})
	return ctx
}

// Screenshot saves a PNG of the tab's whole page as dir/name when dir is
// set (as WANLAB_SCREENSHOTS asks, to refresh docs/), else does nothing.
func Screenshot(ctx context.Context, dir, name string) error {
	if dir == "" {
		return nil
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", name, err)
	}
	return os.WriteFile(dir+"/"+name, png, 0o644)
}
