package token

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestStreamGreeting(t *testing.T) {
	right := New()
	tests := []struct {
		name      string
		presented Token
		wantCheck error
	}{
		{"right token", right, nil},
		{"wrong token", New(), ErrWrongToken},
		{"no token", Token{}, ErrWrongToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			checked := make(chan error, 1)
			go func() {
				err := Check(b, right, time.Second)
				checked <- err
				if err != nil {
					b.Close()
				}
			}()
			greetErr := Greet(a, tc.presented, time.Second)
			if err := <-checked; !errors.Is(err, tc.wantCheck) {
				t.Errorf("Check: %v, want %v", err, tc.wantCheck)
			}
			if (greetErr == nil) != (tc.wantCheck == nil) {
				t.Errorf("Greet: %v, want an error: %v", greetErr, tc.wantCheck != nil)
			}
		})
	}
}

// A sender pointed at something that is not a wanlab listener sends its
// greeting and nothing more.
func TestGreetingToStrangerSendsNothingMore(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		c.Write([]byte("HTTP/1.0 400 Bad Request\r\n\r\n")) // a stranger's answer
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := Greet(c, New(), time.Second); !errors.Is(err, ErrNotListener) {
		t.Errorf("Greet to a stranger: %v, want ErrNotListener", err)
	}
	c.Close()
	if n := <-got; n != MessageLen {
		t.Errorf("the stranger received %d bytes, want only the %d-byte greeting", n, MessageLen)
	}
}

func TestUDPAdmission(t *testing.T) {
	right := New()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	adm := NewAdmitted(right)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			adm.Greeting(pc, buf[:n], from)
		}
	}()
	good, _ := net.Dial("udp4", pc.LocalAddr().String())
	defer good.Close()
	bad, _ := net.Dial("udp4", pc.LocalAddr().String())
	defer bad.Close()
	if err := GreetUDP(context.Background(), good, right, 2*time.Second); err != nil {
		t.Fatalf("right token: %v", err)
	}
	if err := GreetUDP(context.Background(), bad, New(), 500*time.Millisecond); !errors.Is(err, ErrNotListener) {
		t.Errorf("wrong token: %v, want ErrNotListener", err)
	}
	if !adm.Allows(netip.MustParseAddrPort(good.LocalAddr().String())) {
		t.Error("the source with the right token is not admitted")
	}
	if adm.Allows(netip.MustParseAddrPort(bad.LocalAddr().String())) {
		t.Error("the source with a wrong token is admitted")
	}
}

func TestParse(t *testing.T) {
	tok := New()
	if got, err := Parse(tok.Bytes()); err != nil || got != tok {
		t.Errorf("Parse(Bytes()) = %v, %v", got, err)
	}
	if _, err := Parse([]byte("short")); err == nil {
		t.Error("Parse of 5 bytes: no error")
	}
}

// FuzzAdmitted feeds a listener's greeting handling with what any UDP
// source may send: only the exact greeting of the token admits a source.
func FuzzAdmitted(f *testing.F) {
	tok := Token{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	f.Add(tok.greeting())
	f.Add([]byte("WLG1"))
	f.Add(append([]byte("WLG1"), make([]byte, 16)...))
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		f.Fatal(err)
	}
	defer pc.Close()
	from := netip.MustParseAddrPort("127.0.0.1:9") // the discard port: answers go nowhere
	f.Fuzz(func(t *testing.T, b []byte) {
		adm := NewAdmitted(tok)
		greeting := adm.Greeting(pc, b, from)
		admitted := adm.Allows(from)
		right := string(b) == string(tok.greeting())
		if admitted != right {
			t.Fatalf("%x: admitted %v, want %v", b, admitted, right)
		}
		if right && !greeting {
			t.Fatalf("the right greeting was not taken for one")
		}
	})
}
