package stamp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
)

// action is what a relay does with a packet.
type action int

const (
	pass      action = iota
	drop             // lost
	duplicate        // delivered twice
	hold             // delivered after the next packet of its way: reordered
)

// relay stands between a sender and a reflector on loopback and does to
// each packet what its rule says, by the sender's sequence number and
// the way (forward: to the reflector). The sender's number is at octet
// 0 of a sender's packet, and in a reflector's at 24 (48 authenticated).
type relay struct {
	addr string
	rule func(forward bool, seq uint32) action
}

func newRelay(t *testing.T, reflector string, authenticated bool, rule func(forward bool, seq uint32) action) *relay {
	t.Helper()
	front := listen(t, "udp4", "127.0.0.1")
	raddr, err := net.ResolveUDPAddr("udp4", reflector)
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp4", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	seqAt := 24
	if authenticated {
		seqAt = 48
	}
	var mu sync.Mutex
	var sender netip.AddrPort // the first source seen
	// way forwards what arrives on in through send, by the rule.
	way := func(forward bool, in *net.UDPConn, send func([]byte)) {
		var held []byte
		buf := make([]byte, MaxPacketLen)
		for {
			n, from, err := in.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			b := append([]byte(nil), buf[:n]...)
			at := 0
			if forward {
				mu.Lock()
				if !sender.IsValid() {
					sender = from
				}
				mu.Unlock()
			} else {
				at = seqAt
			}
			act := pass
			if len(b) >= at+4 {
				act = rule(forward, binary.BigEndian.Uint32(b[at:]))
			}
			switch act {
			case drop:
				continue
			case hold:
				held = b
				continue
			case duplicate:
				send(b)
			}
			send(b)
			if held != nil {
				send(held)
				held = nil
			}
		}
	}
	go way(true, front, func(b []byte) { back.Write(b) })
	go way(false, back, func(b []byte) {
		mu.Lock()
		to := sender
		mu.Unlock()
		front.WriteToUDPAddrPort(b, to)
	})
	return &relay{addr: front.LocalAddr().String(), rule: rule}
}

// rules makes a relay's rule of the sequence numbers to act on each way.
func rules(forward, backward map[uint32]action) func(bool, uint32) action {
	return func(fwd bool, seq uint32) action {
		if fwd {
			return forward[seq]
		}
		return backward[seq]
	}
}
