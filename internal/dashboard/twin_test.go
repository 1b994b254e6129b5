package dashboard

import (
	"html"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/monitor/web"
)

// TestPathPageOffersTheTwin: a path page links its twin's download, the
// host names escaped into one segment each, and the link downloads a
// scenario, of the newest probe summaries of the three days' (bounded).
func TestPathPageOffersTheTwin(t *testing.T) {
	_, base := site(t)
	code, _, body := get(t, base+pathURL(hostile, "cern"))
	href := web.TwinURL(hostile, "cern")
	if code != 200 || !strings.Contains(body, `href="`+html.EscapeString(href)+`" download>Download twin</a>`) {
		t.Errorf("the hostile host's path page: %d, no link to %s", code, href)
	}
	code, h, body := get(t, base+pathURL("cern", "cnaf"))
	if code != 200 || !strings.Contains(body, `href="/api/v1/paths/cern/cnaf/twin" download>`) {
		t.Fatalf("cern -> cnaf's page: %d, no twin link", code)
	}
	code, h, body = get(t, base+web.TwinURL("cern", "cnaf"))
	if code != 200 || h.Get("Content-Disposition") != "attachment; filename=twin-cern-cnaf.yaml" || !strings.Contains(body, "links:") ||
		!strings.Contains(body, "# Only the newest 2000 probe summaries are fitted") {
		t.Errorf("the twin: %d, %q:\n%s", code, h.Get("Content-Disposition"), body)
	}
}
