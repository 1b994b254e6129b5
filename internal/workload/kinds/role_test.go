package kinds

import (
	"testing"

	"github.com/wanlab/wanlab/internal/workload/kind"
)

// TestRole: a role is found by its name, with its kind, while its kind is
// registered; role names are unique among the kinds.
func TestRole(t *testing.T) {
	unregister := Register(kind.Kind{Name: "toyroles", Roles: []kind.Role{{Name: "toy-a"}, {Name: "toy-b"}}})
	if k, r, ok := Role("toy-b"); !ok || k.Name != "toyroles" || r.Name != "toy-b" {
		t.Errorf("Role(toy-b) = %q, %q, %v", k.Name, r.Name, ok)
	}
	unregister()
	if _, _, ok := Role("toy-b"); ok {
		t.Error("a role of an unregistered kind is still found")
	}
	seen := map[string]bool{}
	for _, k := range All() {
		for _, r := range k.Roles {
			if r.Name == "" || seen[r.Name] || r.Spec == nil || r.Run == nil {
				t.Errorf("kind %s: role %q without a name, a spec or a driver, or of a name taken", k.Name, r.Name)
			}
			seen[r.Name] = true
		}
	}
}
