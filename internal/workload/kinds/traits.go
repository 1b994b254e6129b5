package kinds

import (
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// TraitsOf are the traits of the kind called name, as the analysis and
// the report read them (Kind.Traits); none for a name not registered.
func TraitsOf(name results.Kind) kind.Traits {
	k, _ := Lookup(name)
	return k.Traits
}
