package scenario

import (
	"net/netip"
	"reflect"
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
		{[]string{"mtu=1400", "blackhole=true"}, Direction{Rate: 10 * units.Mbit, Delay: 5 * time.Millisecond, MTU: 1400, Blackhole: true, Queue: Queue{Packets: 100}}, ""},
		{[]string{"down=true"}, Direction{Rate: 10 * units.Mbit, Delay: 5 * time.Millisecond, MTU: DefaultMTU, Down: true, Queue: Queue{Packets: 100}}, ""},
		{[]string{"hops=gw@192.0.2.1,192.0.2.2"}, Direction{Rate: 10 * units.Mbit, Delay: 5 * time.Millisecond, MTU: DefaultMTU, Queue: Queue{Packets: 100},
			Hops: []Hop{{Name: "gw", Addr: netip.MustParseAddr("192.0.2.1")}, {Addr: netip.MustParseAddr("192.0.2.2")}}}, ""},
		{[]string{"hops=none"}, base, ""},
		{[]string{"mtu=100"}, base, "outside 576..9000"},
		{[]string{"mtu=big"}, base, "MTU in bytes"},
		{[]string{"hops=::1"}, base, "IPv4"},
		{[]string{"hops=127.0.0.1"}, base, "cannot be a router"},
		{[]string{"rate=0"}, base, "use down=true"},
		{[]string{"rate=0Mbit"}, base, "use down=true"},
		{[]string{"down=perhaps"}, base, "true or false"},
		{[]string{"colour=red"}, base, `no setting "colour"`},
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
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Change(%q) = %+v, %v; want %+v", tt.settings, got, err, tt.want)
		}
	}
}
