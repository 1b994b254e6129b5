// Package token is the per-test secret that opens a test's data plane, as
// iperf3's cookie does. The receiving agent draws a token when it listens
// and gives it only to the controller, which hands it to the sender; a
// connection or a UDP source that does not present it is not part of the
// test. The receiver answers a right token with a proof of its own, and a
// sender sends nothing more until it has that proof: an agent asked to
// send toward something that is not a wanlab test listener sends only
// greetings, then stops, so it never becomes an open traffic generator. A
// stream sender greets once; a UDP sender, whose greeting may be lost,
// greets at most 12 times within its wait, backing off (see GreetUDP),
// whatever the peer sends back, ICMP refusals included.
package token

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Token is one test's secret.
type Token [16]byte

// New draws a token.
func New() Token {
	var t Token
	rand.Read(t[:]) // never fails (crypto/rand's contract since Go 1.24)
	return t
}

// Parse reads a token as a request carries it.
func Parse(b []byte) (Token, error) {
	var t Token
	if len(b) != len(t) {
		return t, fmt.Errorf("the test's token has %d bytes, not %d", len(b), len(t))
	}
	copy(t[:], b)
	return t, nil
}

// Bytes is the token as a request carries it.
func (t Token) Bytes() []byte { return t[:] }

// IsZero says the token was never drawn.
func (t Token) IsZero() bool { return t == Token{} }

// MarshalText writes the token in hex, as workload specs carry it in JSON.
func (t Token) MarshalText() ([]byte, error) { return []byte(hex.EncodeToString(t[:])), nil }

// UnmarshalText reads a token written by MarshalText.
func (t *Token) UnmarshalText(b []byte) error {
	raw, err := hex.DecodeString(string(b))
	if err != nil {
		return fmt.Errorf("the test's token is not hex: %w", err)
	}
	*t, err = Parse(raw)
	return err
}

var (
	greetMagic = [4]byte{'W', 'L', 'G', '1'}
	ackMagic   = [4]byte{'W', 'L', 'A', '1'}
)

// MessageLen is the size of a greeting and of an acknowledgement.
const MessageLen = 4 + 16

func (t Token) greeting() []byte { return append(greetMagic[:], t[:]...) }

// Greeting is what opens a connection of the test, for a client that sends
// it with its first message instead of waiting for the proof (Greet): the
// application workloads, whose request-reply timings must not gain a round
// trip. It then reads the proof with ReadProof before the first reply.
func (t Token) Greeting() []byte { return t.greeting() }

// ReadProof reads the listener's proof of the token from r.
func ReadProof(r io.Reader, t Token) error {
	var got [MessageLen]byte
	if _, err := io.ReadFull(r, got[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrNotListener, err)
	}
	if subtle.ConstantTimeCompare(got[:], t.ack()) != 1 {
		return ErrNotListener
	}
	return nil
}

func (t Token) ack() []byte {
	proof := sha256.Sum256(append([]byte("wanlab test listener "), t[:]...))
	return append(ackMagic[:], proof[:16]...)
}

// ErrWrongToken means a peer did not present the test's token.
var ErrWrongToken = errors.New("not a connection of this test (wrong or missing token)")

// ErrNotListener means the peer did not prove it is this test's listener.
var ErrNotListener = errors.New("the peer is not this test's wanlab listener (no proof of the token): nothing more is sent to it")

// Greet opens a stream connection of a test: it sends the token and waits
// up to wait for the listener's proof.
func Greet(c net.Conn, t Token, wait time.Duration) error {
	c.SetDeadline(time.Now().Add(wait))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(t.greeting()); err != nil {
		return fmt.Errorf("greeting the listener: %w", err)
	}
	var got [MessageLen]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrNotListener, err)
	}
	if subtle.ConstantTimeCompare(got[:], t.ack()) != 1 {
		return ErrNotListener
	}
	return nil
}

// Check accepts a stream connection of a test: it reads the greeting
// within wait and, if it carries the token, answers with the proof.
func Check(c net.Conn, t Token, wait time.Duration) error {
	c.SetDeadline(time.Now().Add(wait))
	defer c.SetDeadline(time.Time{})
	var got [MessageLen]byte
	if _, err := io.ReadFull(c, got[:]); err != nil {
		return fmt.Errorf("reading a connection's token: %w", err)
	}
	if subtle.ConstantTimeCompare(got[:], t.greeting()) != 1 {
		return ErrWrongToken
	}
	if _, err := c.Write(t.ack()); err != nil {
		return fmt.Errorf("answering a connection's token: %w", err)
	}
	return nil
}

// A UDP greeting may be lost, so it is repeated until it is answered:
// first after greetFirst, then after twice as long each time, the gap
// capped at greetGapMax and at a maxGreetings-th of the wait (so that the
// greetings spread over a short wait too), at most maxGreetings in all.
// Nothing the peer sends (an ICMP refusal included) hastens a repeat.
const (
	greetFirst   = 100 * time.Millisecond
	greetGapMax  = time.Second
	maxGreetings = 12
)

// greetSchedule is when, from the first, the greetings of a wait are sent.
func greetSchedule(wait time.Duration) []time.Duration {
	gapMax := min(greetGapMax, max(wait/maxGreetings, greetFirst))
	at := []time.Duration{0}
	for gap := greetFirst; len(at) < maxGreetings; gap *= 2 {
		next := at[len(at)-1] + min(gap, gapMax)
		if next >= wait {
			break
		}
		at = append(at, next)
	}
	return at
}

// GreetUDP opens a connected UDP socket's part in a test: it sends the
// greeting and waits for the listener's proof, for at most wait, repeating
// the greeting as greetSchedule says. Datagrams other than the proof are
// discarded meanwhile.
func GreetUDP(ctx context.Context, c net.Conn, t Token, wait time.Duration) error {
	defer c.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	start := time.Now()
	end := start.Add(wait)
	buf := make([]byte, 2048)
	want := t.ack()
	schedule := greetSchedule(wait)
	for i := range schedule {
		if ctx.Err() != nil || !time.Now().Before(end) {
			break
		}
		if _, err := c.Write(t.greeting()); err != nil && !isRefused(err) {
			return fmt.Errorf("greeting the listener: %w", err)
		}
		next := end
		if i+1 < len(schedule) {
			next = start.Add(schedule[i+1])
		}
		c.SetReadDeadline(next)
		if ctx.Err() != nil {
			break // ended before the deadline was set
		}
		for waiting := true; waiting; {
			n, err := c.Read(buf)
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				waiting = false // greet again, or give up
			case errors.Is(err, net.ErrClosed):
				return fmt.Errorf("greeting the listener: %w", err)
			case err != nil:
				// An ICMP refusal of a greeting, reported once: wait on.
			case n == MessageLen && subtle.ConstantTimeCompare(buf[:n], want) == 1:
				return nil
			}
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: no answer within %v", ErrNotListener, wait)
}

func isRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write"
}

// Admitted are the UDP sources that presented a test's token.
type Admitted struct {
	token Token
	mu    sync.Mutex
	from  map[netip.AddrPort]bool
}

// NewAdmitted starts with no source admitted.
func NewAdmitted(t Token) *Admitted {
	return &Admitted{token: t, from: map[netip.AddrPort]bool{}}
}

// maxSources bounds the sources one test admits: a test has at most its
// streams' worth, and a flood of forged greetings must not grow the set.
const maxSources = 4096

// Greeting handles a datagram if it is a greeting: a right one admits its
// source and is answered with the proof on pc. It reports whether b was a
// greeting (right or wrong), which the caller then ignores.
func (a *Admitted) Greeting(pc net.PacketConn, b []byte, from netip.AddrPort) bool {
	from = unmap(from)
	if len(b) != MessageLen || [4]byte(b[:4]) != greetMagic {
		return false
	}
	if subtle.ConstantTimeCompare(b, a.token.greeting()) != 1 {
		return true
	}
	a.mu.Lock()
	if len(a.from) < maxSources {
		a.from[from] = true
	}
	ok := a.from[from]
	a.mu.Unlock()
	if ok {
		pc.WriteTo(a.token.ack(), net.UDPAddrFromAddrPort(from))
	}
	return true
}

// Allows reports whether a source presented the token.
func (a *Admitted) Allows(from netip.AddrPort) bool {
	from = unmap(from)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.from[from]
}

func unmap(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }
