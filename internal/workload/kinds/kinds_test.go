package kinds

import (
	"testing"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// TestRegistry: every kind of all has a name of its own, a decoder and a
// driver, and is found by its name.
func TestRegistry(t *testing.T) {
	seen := map[results.Kind]bool{}
	for _, k := range All() {
		if k.Name == "" || seen[k.Name] || k.Decode == nil || k.Run == nil {
			t.Errorf("kind %q: without a name, registered twice, or without a decoder or a driver", k.Name)
		}
		seen[k.Name] = true
		if got, ok := Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %q, %v", k.Name, got.Name, ok)
		}
	}
	if _, ok := Lookup(results.Command); !ok {
		t.Error("the command kind is not registered")
	}
	if _, ok := Lookup("no-such-kind"); ok {
		t.Error("found a kind that is not registered")
	}
}

func TestRegister(t *testing.T) {
	unregister := Register(kind.Kind{Name: "toy"})
	if _, ok := Lookup("toy"); !ok {
		t.Fatal("a registered kind is not found")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a kind registered twice is accepted")
			}
		}()
		Register(kind.Kind{Name: results.Command})
	}()
	unregister()
	if _, ok := Lookup("toy"); ok {
		t.Error("an unregistered kind is still found")
	}
}
