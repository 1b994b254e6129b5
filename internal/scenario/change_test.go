package scenario

import (
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/units"
)

func TestChange(t *testing.T) {
	base := Direction{Rate: 10 * units.Mbit, Delay: 5 * time.Millisecond, MTU: DefaultMTU, Queue: Queue{Packets: 100}}
	tests := []struct {
		settings []string
		want     Direction
		err      string
	}{
		{[]string{"rate=2Mbit"}, Direction{Rate: 2 * units.Mbit, Delay: 5 * time.Millisecond, MTU: DefaultMTU, Queue: Queue{Packets: 100}}, ""},
		{[]string{"delay=150ms", "loss=1%", "jitter=2ms"}, Direction{Rate: 10 * units.Mbit, Delay: 150 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: Loss{Random: 0.01}, MTU: DefaultMTU, Queue: Queue{Packets: 100}}, ""},
		{[]string{"queue=64KiB", "reorder=true"}, Direction{Rate: 10 * units.Mbit, Delay: 5 * time.Millisecond, MTU: DefaultMTU, Queue: Queue{Bytes: 64 << 10}, Reorder: true}, ""},
		{[]string{"rate"}, base, "key=value"},
		{[]string{"mtu=9000"}, base, `no setting "mtu"`},
		{[]string{"delay=5ps"}, base, "delay: duration"},
		{[]string{"loss=150%"}, base, "loss"},
		{[]string{"queue=0"}, base, "at least one packet"},
		{[]string{"reorder=maybe"}, base, "true or false"},
	}
	for _, tt := range tests {
		got, err := Change(base, tt.settings)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Change(%q) error %v, want one containing %q", tt.settings, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Change(%q) = %+v, %v; want %+v", tt.settings, got, err, tt.want)
		}
	}
}
