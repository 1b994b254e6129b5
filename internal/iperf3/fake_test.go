package iperf3

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeServer is a scripted iperf3 server on loopback, for the protocol's
// edge cases a real one does not show on demand.
type fakeServer struct {
	ln   net.Listener
	addr string
	// data are the test's accepted streams; drained in the background.
	mu   sync.Mutex
	data []net.Conn
	wg   sync.WaitGroup
}

// startFake serves one control connection with script, which gets the
// server to accept streams on the same listener.
func startFake(t *testing.T, script func(f *fakeServer, c net.Conn)) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{ln: ln, addr: ln.Addr().String()}
	f.wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		script(f, c)
	})
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, d := range f.data {
			d.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func send(c net.Conn, states ...State) {
	for _, st := range states {
		c.Write([]byte{byte(st)})
	}
}

func sendInt32s(c net.Conn, v ...int32) {
	for _, x := range v {
		binary.Write(c, binary.BigEndian, x)
	}
}

// handshake reads the cookie and the parameters as a server does.
func (f *fakeServer) handshake(c net.Conn) (cookie []byte, p map[string]any) {
	cookie = make([]byte, CookieSize)
	if _, err := io.ReadFull(c, cookie); err != nil {
		return nil, nil
	}
	send(c, ParamExchange)
	data, err := readFrame(c, MaxParamsJSON)
	if err != nil {
		return nil, nil
	}
	json.Unmarshal(data, &p)
	return cookie, p
}

// streams accepts n streams, checks their cookie, and sinks (or, for a
// reversed test, fills) them until they close.
func (f *fakeServer) streams(n int, cookie []byte, reverse bool) bool {
	for range n {
		d, err := f.ln.Accept()
		if err != nil {
			return false
		}
		got := make([]byte, CookieSize)
		if _, err := io.ReadFull(d, got); err != nil || !bytes.Equal(got, cookie) {
			d.Close()
			return false
		}
		f.mu.Lock()
		f.data = append(f.data, d)
		f.mu.Unlock()
		f.wg.Go(func() {
			if reverse {
				buf := make([]byte, 64<<10)
				for {
					if _, err := d.Write(buf); err != nil {
						return
					}
				}
			}
			io.Copy(io.Discard, d)
		})
	}
	return true
}

// start runs a test up to TEST_RUNNING.
func (f *fakeServer) start(c net.Conn) (p map[string]any, ok bool) {
	cookie, p := f.handshake(c)
	if cookie == nil {
		return nil, false
	}
	send(c, CreateStreams)
	n := int(p["parallel"].(float64))
	_, reverse := p["reverse"]
	if !f.streams(n, cookie, reverse) {
		return nil, false
	}
	send(c, TestStart, TestRunning)
	return p, true
}

// finish waits for TEST_END and exchanges results, sending results.
func (f *fakeServer) finish(c net.Conn, results []byte) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || State(b[0]) != TestEnd {
		return
	}
	send(c, ExchangeResults)
	if _, err := readFrame(c, MaxResultsJSON); err != nil {
		return
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(results)))
	c.Write(append(msg, results...))
	send(c, DisplayResults)
	io.ReadFull(c, b[:]) // IPERF_DONE
}

const fakeResults = `{"cpu_util_total":1.5,"cpu_util_user":1,"cpu_util_system":0.5,"sender_has_retransmits":1,"congestion_used":"reno",` +
	`"streams":[{"id":1,"bytes":1000,"retransmits":7,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.5},` +
	`{"id":3,"bytes":3000,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.5}]}`

func TestFakeServers(t *testing.T) {
	spec := Spec{Streams: 2, Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond}
	for _, tc := range []struct {
		name    string
		spec    Spec
		timeout time.Duration // 0: 10s
		script  func(f *fakeServer, c net.Conn)
		want    error  // errors.Is
		words   string // in the message
		partial bool   // a result comes back with the error
	}{
		{name: "busy", script: func(f *fakeServer, c net.Conn) { send(c, AccessDenied) },
			want: ErrBusy, words: "busy running a test"},
		{name: "silent", timeout: 300 * time.Millisecond, script: func(f *fakeServer, c net.Conn) { io.Copy(io.Discard, c) },
			want: ErrTimeout, words: "no answer within 300ms waiting for PARAM_EXCHANGE"},
		{name: "not iperf3", script: func(f *fakeServer, c net.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) },
			want: ErrProtocol, words: "unknown state 72"},
		{name: "closes after the cookie", script: func(f *fakeServer, c net.Conn) { io.ReadFull(c, make([]byte, CookieSize)) },
			want: ErrServerClosed, words: "waiting for PARAM_EXCHANGE"},
		{name: "server error", script: func(f *fakeServer, c net.Conn) {
			f.handshake(c)
			send(c, ServerErrorSt)
			sendInt32s(c, CodeBufSize, 0)
		}, want: &ServerError{Code: CodeBufSize}, words: "socket buffer size too large (iperf3 error 8)"},
		{name: "server error with errno", script: func(f *fakeServer, c net.Conn) {
			f.handshake(c)
			send(c, ServerErrorSt)
			sendInt32s(c, CodeSetCongestion, int32(syscall.ENOENT))
		}, want: syscall.ENOENT, words: "unable to set TCP_CONGESTION (iperf3 error 134): errno 2"},
		{name: "truncated server error", script: func(f *fakeServer, c net.Conn) {
			f.handshake(c)
			send(c, ServerErrorSt)
			c.Write([]byte{0, 0})
		}, want: io.ErrUnexpectedEOF, words: "SERVER_ERROR"},
		{name: "terminated during the test", script: func(f *fakeServer, c net.Conn) {
			if _, ok := f.start(c); ok {
				time.Sleep(100 * time.Millisecond)
				send(c, ServerTerminate)
				io.Copy(io.Discard, c)
			}
		}, spec: Spec{Streams: 2, Duration: 20 * time.Second}, want: ErrServerTerminated, partial: true},
		{name: "duration expired", script: func(f *fakeServer, c net.Conn) {
			if _, ok := f.start(c); ok {
				send(c, ServerErrorSt)
				sendInt32s(c, CodeDurationExpired, 0)
			}
		}, spec: Spec{Streams: 1, Duration: 20 * time.Second}, want: ErrTimeout, words: "server test duration expired", partial: true},
		{name: "closes during the test", script: func(f *fakeServer, c net.Conn) { f.start(c) },
			spec: Spec{Streams: 1, Duration: 20 * time.Second}, want: ErrServerClosed, partial: true},
		{name: "results too long", script: func(f *fakeServer, c net.Conn) {
			if _, ok := f.start(c); ok {
				f.finish(c, bytes.Repeat([]byte{' '}, MaxResultsJSON+1))
			}
		}, want: ErrProtocol, words: "a length of 1048577 bytes (at most 1048576)", partial: true},
		{name: "results of another test", script: func(f *fakeServer, c net.Conn) {
			if _, ok := f.start(c); ok {
				f.finish(c, []byte(strings.Replace(fakeResults, `"id":3`, `"id":9`, 1)))
			}
		}, want: ErrProtocol, words: "stream 9", partial: true},
		{name: "results without streams", script: func(f *fakeServer, c net.Conn) {
			if _, ok := f.start(c); ok {
				f.finish(c, []byte(`{"cpu_util_total":0}`))
			}
		}, want: ErrProtocol, words: "lack", partial: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, tc.script)
			s := spec
			if tc.spec.Streams > 0 {
				s = tc.spec
			}
			res, err := Run(context.Background(), f.addr, s, Options{Timeout: tc.timeout})
			if err == nil {
				t.Fatal("no error")
			}
			var se *ServerError
			if want, ok := tc.want.(*ServerError); ok {
				if !errors.As(err, &se) || se.Code != want.Code {
					t.Errorf("error %v: want a ServerError with code %d", err, want.Code)
				}
			} else if !errors.Is(err, tc.want) {
				t.Errorf("error %v: want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), f.addr) || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("error %q: want it to name %s and say %q", err, f.addr, tc.words)
			}
			if (res != nil) != tc.partial {
				t.Fatalf("result %+v: want one: %v", res, tc.partial)
			}
			if res != nil && (!res.Partial || res.Error == "" || len(res.Streams) != s.Streams) {
				t.Errorf("partial result %+v: want Partial, the error and %d streams", res, s.Streams)
			}
		})
	}
}

// TestFakeExchange: a whole test, and what the client makes of the
// server's results, both ways.
func TestFakeExchange(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		t.Run(map[bool]string{false: "forward", true: "reverse"}[reverse], func(t *testing.T) {
			var got map[string]any
			f := startFake(t, func(f *fakeServer, c net.Conn) {
				p, ok := f.start(c)
				if ok {
					got = p
					f.finish(c, []byte(fakeResults))
				}
			})
			var intervals int
			spec := Spec{Streams: 2, Duration: 300 * time.Millisecond, Interval: 50 * time.Millisecond, Reverse: reverse, Congestion: "cubic", FQRate: 8e9}
			res, err := Run(context.Background(), f.addr, spec, Options{OnInterval: func(Interval) { intervals++ }})
			if err != nil {
				t.Fatal(err)
			}
			f.wg.Wait()
			if _, ok := got["reverse"]; ok != reverse {
				t.Errorf("parameters %v: reverse should be there only when reversed", got)
			}
			if got["time"] != 1.0 || got["parallel"] != 2.0 || got["congestion"] != "cubic" || got["tcp"] != true || got["fqrate"] != 8e9 || got["len"] != float64(DefaultBlockSize) {
				t.Errorf("parameters %v", got)
			}
			if intervals == 0 || intervals != len(res.Intervals) {
				t.Errorf("%d intervals handed on, %d kept", intervals, len(res.Intervals))
			}
			if res.Streams[0].ID != 1 || res.Streams[1].ID != 3 {
				t.Errorf("stream ids %d, %d: want iperf3's 1, 3", res.Streams[0].ID, res.Streams[1].ID)
			}
			peer := &res.Received
			if reverse {
				peer = &res.Sent
			}
			if peer.Bytes != 4000 || peer.Seconds != 0.5 || peer.BitsPerSecond != 64000 {
				t.Errorf("the server's side %+v: want its 4000 bytes over 0.5 s", *peer)
			}
			if res.ServerCPUPercent != 1.5 {
				t.Errorf("server CPU %v", res.ServerCPUPercent)
			}
			if reverse {
				// Stream 3's retransmits are iperf3 3.12's -1.
				if r := res.Streams[0].Retransmits; r == nil || *r != 7 || res.Streams[1].Retransmits != nil {
					t.Errorf("the server's retransmits: %v, %v", res.Streams[0].Retransmits, res.Streams[1].Retransmits)
				}
				if res.Congestion != "reno" || len(res.Warnings) != 1 {
					t.Errorf("congestion %q, warnings %q: want the server's reno and a warning that it is not cubic", res.Congestion, res.Warnings)
				}
				if res.Received.Bytes == 0 {
					t.Error("received nothing")
				}
			} else {
				if res.Sent.Bytes == 0 || res.Sent.Retransmits == nil || res.Streams[0].TCP == nil {
					t.Errorf("sent %+v, stream %+v: want bytes, retransmits and TCP_INFO", res.Sent, res.Streams[0])
				}
				if res.Congestion != "cubic" {
					t.Errorf("congestion %q, want cubic", res.Congestion)
				}
			}
		})
	}
}

// TestFakeBytes: a test ended by bytes moves each stream's bytes, and
// the server is told their sum.
func TestFakeBytes(t *testing.T) {
	var num any
	f := startFake(t, func(f *fakeServer, c net.Conn) {
		p, ok := f.start(c)
		if ok {
			num = p["num"]
			f.finish(c, []byte(fakeResults))
		}
	})
	res, err := Run(context.Background(), f.addr, Spec{Streams: 2, Bytes: 5 << 20}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.wg.Wait()
	if num != float64(10<<20) {
		t.Errorf("num %v: want the sum of the streams' bytes", num)
	}
	for _, s := range res.Streams {
		if s.Sent != 5<<20 {
			t.Errorf("stream %d sent %d bytes, want %d", s.ID, s.Sent, 5<<20)
		}
	}
}

// TestFakeTrickle: a server that takes a test's bytes too slowly to stall
// it is given up at the most a test may last.
func TestFakeTrickle(t *testing.T) {
	f := startFake(t, func(f *fakeServer, c net.Conn) {
		f.start(c)
		io.Copy(io.Discard, c)
	})
	// Reversed, the fake sends as fast as it can: a test of a terabyte
	// a stream does not end by its bytes within 300ms.
	res, err := Run(context.Background(), f.addr, Spec{Streams: 1, Bytes: 1 << 40, Reverse: true, Interval: 50 * time.Millisecond},
		Options{MaxDuration: 300 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "did not move within 300ms") || res == nil || res.Received.Bytes == 0 {
		t.Errorf("error %v, result %+v: want the test given up after 300ms, with what it received", err, res)
	}
}

// TestUnreachable: a port nobody listens on is named in the error.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Run(context.Background(), addr, Spec{Streams: 1, Duration: time.Second}, Options{Timeout: time.Second})
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %v: want connection refused, naming %s", err, addr)
	}
}

// TestCancel: the caller's end stops a test under way, and the server is
// told CLIENT_TERMINATE.
func TestCancel(t *testing.T) {
	said := make(chan State, 1)
	f := startFake(t, func(f *fakeServer, c net.Conn) {
		if _, ok := f.start(c); ok {
			var b [1]byte
			io.ReadFull(c, b[:])
			said <- State(int8(b[0]))
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	res, err := Run(ctx, f.addr, Spec{Streams: 1, Duration: time.Minute, Interval: 20 * time.Millisecond},
		Options{OnInterval: func(Interval) { cancel() }})
	if !errors.Is(err, context.Canceled) || res == nil || !res.Partial {
		t.Fatalf("error %v, result %+v: want context.Canceled and a partial result", err, res)
	}
	select {
	case st := <-said:
		if st != ClientTerminate {
			t.Errorf("the server was told %v, want CLIENT_TERMINATE", st)
		}
	case <-time.After(10 * time.Second):
		t.Error("the server was told nothing")
	}
}

// TestKeptIntervalsBounded: a long test at short intervals keeps at most
// MaxKeptIntervals of them (OnInterval gets every one) and counts the rest.
func TestKeptIntervalsBounded(t *testing.T) {
	f := startFake(t, func(f *fakeServer, c net.Conn) {
		if _, ok := f.start(c); ok {
			f.finish(c, []byte(fakeResults))
		}
	})
	handed := 0
	spec := Spec{Streams: 2, Duration: 7 * time.Second, Interval: MinInterval}
	res, err := Run(context.Background(), f.addr, spec, Options{OnInterval: func(Interval) { handed++ }})
	if err != nil {
		t.Fatal(err)
	}
	f.wg.Wait()
	if len(res.Intervals) > MaxKeptIntervals || len(res.Intervals)+res.IntervalsDropped != handed {
		t.Errorf("%d intervals handed on, %d kept, %d dropped: want at most %d kept and the rest counted", handed, len(res.Intervals), res.IntervalsDropped, MaxKeptIntervals)
	}
	t.Logf("%d intervals handed on, %d kept", handed, len(res.Intervals))
}

// hostileResults are a server's results claiming nearly 2^63 bytes on each
// of three streams: their sum is past 2^64.
const hostileResults = `{"cpu_util_total":1,"cpu_util_user":1,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[` +
	`{"id":1,"bytes":9.2e18,"retransmits":0,"start_time":0,"end_time":0.3},` +
	`{"id":3,"bytes":9.2e18,"retransmits":0,"start_time":0,"end_time":0.3},` +
	`{"id":4,"bytes":9.2e18,"retransmits":0,"start_time":0,"end_time":0.3}]}`

// TestFakeHostileCounts: a server's counts are summed without wrapping
// around, and held to what can have moved: no more than the client sent
// on a stream it sent, and no more than the link carries in the test's
// time in all; each count lowered is a warning.
func TestFakeHostileCounts(t *testing.T) {
	const rate = 8e9 // bit/s
	for _, reverse := range []bool{false, true} {
		t.Run(map[bool]string{false: "forward", true: "reverse"}[reverse], func(t *testing.T) {
			f := startFake(t, func(f *fakeServer, c net.Conn) {
				if _, ok := f.start(c); ok {
					f.finish(c, []byte(hostileResults))
				}
			})
			start := time.Now()
			res, err := Run(context.Background(), f.addr, Spec{Streams: 3, Duration: 200 * time.Millisecond, Reverse: reverse}, Options{LinkRate: rate})
			if err != nil {
				t.Fatal(err)
			}
			most := uint64(rate / 8 * (time.Since(start) + linkSlack).Seconds())
			peer, ours := res.Received, res.Sent
			if reverse {
				peer, ours = res.Sent, res.Received
			}
			if peer.Bytes > most || peer.Bytes == 0 {
				t.Errorf("the server's %d bytes: want some, at most the link's %d", peer.Bytes, most)
			}
			for _, s := range res.Streams {
				if !reverse && s.Received > s.Sent {
					t.Errorf("stream %d received %d of the %d sent", s.ID, s.Received, s.Sent)
				}
			}
			if ours.Bytes == 0 || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "more than can have moved") {
				t.Errorf("ours %+v, warnings %q", ours, res.Warnings)
			}
		})
	}
}

func TestAddBytes(t *testing.T) {
	if got := addBytes(math.MaxUint64-1, 5); got != math.MaxUint64 {
		t.Errorf("saturated sum %d", got)
	}
	if got := addBytes(2, 3); got != 5 {
		t.Errorf("2+3 = %d", got)
	}
}
