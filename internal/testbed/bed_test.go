package testbed

import "testing"

func TestMachineCPU(t *testing.T) {
	busy, total := machineCPU()
	if total <= 0 || busy < 0 || busy > total {
		t.Errorf("machineCPU() = %v, %v", busy, total)
	}
}
