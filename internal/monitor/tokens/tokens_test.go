package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	tok, line, err := New("alice@cern")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := []struct{ name, text, err string }{
		{"good", "# admins\n" + line + "\n\n", ""},
		{"no hash prefix", "bob 0123", "give NAME sha256:HEX"},
		{"short hash", "bob sha256:abcd", "give NAME sha256:HEX"},
		{"bad name", "b;ob sha256:" + strings.Repeat("a", 64), "give NAME sha256:HEX"},
		{"three fields", "bob x sha256:" + strings.Repeat("a", 64), "give NAME sha256:HEX"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			os.WriteFile(path, []byte(c.text), 0o600)
			ts, err := Load(path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ts.Who(tok) != "alice@cern" || ts.Who(tok+"x") != "" || ts.Who("") != "" {
				t.Errorf("Who(token) = %q", ts.Who(tok))
			}
		})
	}
	if _, _, err := New("no spaces"); err == nil {
		t.Error("a name with a space was accepted")
	}
}
