package testbed

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMachineCPU(t *testing.T) {
	busy, total := MachineCPU()
	if total <= 0 || busy < 0 || busy > total {
		t.Errorf("MachineCPU() = %v, %v", busy, total)
	}
}

// readRequest takes a JSON body within its limit, and answers 400 saying
// what it was reading otherwise.
func TestReadRequest(t *testing.T) {
	for _, c := range []struct {
		name, body string
		ok         bool
		answer     string
	}{
		{"a request", `{"select": "a->b", "settings": ["delay=5ms"]}`, true, ""},
		{"not JSON", `delay=5ms`, false, "reading the request: invalid character"},
		{"over the limit", `{"select": "` + strings.Repeat("x", 100) + `"}`, false, "reading the request: unexpected EOF"},
	} {
		w := httptest.NewRecorder()
		req, ok := readRequest[SetRequest](w, httptest.NewRequest("POST", "/directions", strings.NewReader(c.body)), 64, "the request")
		switch {
		case ok != c.ok:
			t.Errorf("%s: ok %v, want %v (%d %s)", c.name, ok, c.ok, w.Code, w.Body)
		case ok && (req.Select != "a->b" || len(req.Settings) != 1 || w.Code != http.StatusOK):
			t.Errorf("%s: %+v, answered %d", c.name, req, w.Code)
		case !ok && (w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), c.answer)):
			t.Errorf("%s: answered %d %q, want 400 with %q", c.name, w.Code, w.Body, c.answer)
		}
	}
}
