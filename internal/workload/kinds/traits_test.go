package kinds

import (
	"testing"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// TestTraits: every kind the documentation lists is registered, and a
// kind's traits are its own; a name not registered has none.
func TestTraits(t *testing.T) {
	for _, name := range results.Kinds {
		if _, ok := Lookup(name); !ok {
			t.Errorf("kind %s is not registered: it has no traits", name)
		}
	}
	defer Register(kind.Kind{Name: "toy", Traits: kind.Traits{Findings: []kind.Finding{kind.Failures}}})()
	if tr := TraitsOf("toy"); !tr.Has(kind.Failures) || tr.Has(kind.Saturation) {
		t.Errorf("the toy kind's traits are %+v", tr)
	}
	if tr := TraitsOf("no-such-kind"); len(tr.Findings) > 0 || tr.Plot.Figure != "" {
		t.Errorf("a kind that does not exist has traits %+v", tr)
	}
}

// TestColumnsParse: every summary column of a kind shows figures
// results.ParseFigure knows, under a head of its own.
func TestColumnsParse(t *testing.T) {
	for _, k := range All() {
		heads := map[string]bool{}
		for _, c := range k.Traits.Columns {
			if c.Head == "" || heads[c.Head] || len(c.Figures) == 0 || c.Format == "" {
				t.Errorf("%s: column %+v without a head, figures or a format, or of a head taken", k.Name, c)
			}
			heads[c.Head] = true
			for _, f := range c.Figures {
				if got, ok := results.ParseFigure(f.String()); !ok || got != f {
					t.Errorf("%s column %s: %q reads as %+v, %v", k.Name, c.Head, f, got, ok)
				}
			}
		}
	}
}
