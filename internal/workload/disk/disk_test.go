package disk

import (
	"os"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/testsupport"
)

func TestRun(t *testing.T) {
	for _, spec := range []Spec{
		{Dir: testsupport.TempRoot(t), Size: 8 << 20, Block: 1 << 20, Fsync: true},
		{Dir: testsupport.TempRoot(t), Size: 4 << 20, Block: 64 << 10, Direct: true},
	} {
		res, err := Run(spec)
		if err != nil {
			if spec.Direct && strings.Contains(err.Error(), "invalid argument") {
				t.Logf("O_DIRECT is not supported on this file system: %v", err)
				continue
			}
			t.Fatal(err)
		}
		if res.WriteBytesPerSecond <= 0 || res.ReadBytesPerSecond <= 0 || res.Bytes != spec.Size {
			t.Errorf("%+v: %+v", spec, res)
		}
		entries, _ := os.ReadDir(spec.Dir.Name())
		if len(entries) != 0 {
			t.Errorf("test file left behind in %s", spec.Dir.Name())
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Size: 0, Block: 4096}, "size must be positive"},
		{Spec{Size: 1 << 40, Block: 4096}, "over the agent's limit"},
		{Spec{Size: 1 << 20, Block: 100}, "block 100"},
		{Spec{Size: 1 << 20, Block: 5000, Direct: true}, "multiple of 4096"},
	}
	for _, tt := range tests {
		if err := tt.spec.Validate(limits.Limits{MaxBytes: 1 << 30}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
}
