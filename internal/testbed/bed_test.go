package testbed

import "testing"

func TestMachineCPU(t *testing.T) {
	busy, total := MachineCPU()
	if total <= 0 || busy < 0 || busy > total {
		t.Errorf("MachineCPU() = %v, %v", busy, total)
	}
}
