package iperf3

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// The wire protocol, as iperf3 3.x implements it (src/iperf_api.h,
// iperf_api.c, iperf_client_api.c): a control connection on which the
// client writes a 37-byte cookie and then the peers exchange one-byte
// states, two length-prefixed JSON documents (the client's parameters,
// then both sides' results), and, from the server on an error, two
// 32-bit big-endian numbers. Each data stream connects to the same port
// and opens with the same cookie.

// State is one byte of the control connection: where the test is.
type State int8

// The states (iperf_api.h). Those iperf3 marks unused are left out.
const (
	TestStart       State = 1
	TestRunning     State = 2
	TestEnd         State = 4
	ParamExchange   State = 9
	CreateStreams   State = 10
	ServerTerminate State = 11
	ClientTerminate State = 12
	ExchangeResults State = 13
	DisplayResults  State = 14
	IperfStart      State = 15
	IperfDone       State = 16
	AccessDenied    State = -1
	ServerErrorSt   State = -2
)

var stateNames = map[State]string{
	TestStart: "TEST_START", TestRunning: "TEST_RUNNING", TestEnd: "TEST_END",
	ParamExchange: "PARAM_EXCHANGE", CreateStreams: "CREATE_STREAMS",
	ServerTerminate: "SERVER_TERMINATE", ClientTerminate: "CLIENT_TERMINATE",
	ExchangeResults: "EXCHANGE_RESULTS", DisplayResults: "DISPLAY_RESULTS",
	IperfStart: "IPERF_START", IperfDone: "IPERF_DONE",
	AccessDenied: "ACCESS_DENIED", ServerErrorSt: "SERVER_ERROR",
}

func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("unknown state %d", int8(s))
}

// Sizes of the protocol.
const (
	// CookieSize is the cookie's length: 36 characters and a NUL.
	CookieSize = 37
	// MaxParamsJSON is the most a server reads of the parameters
	// (MAX_PARAMS_JSON_STRING); ours are far smaller.
	MaxParamsJSON = 8 << 10
	// MaxResultsJSON bounds the results a server may send us. iperf3
	// reads results without a bound; ours, without the server's own
	// output (which wanlab never asks for), are about 200 bytes a stream.
	MaxResultsJSON = 1 << 20
	// MaxStreams is the most streams an iperf3 server takes (MAX_STREAMS).
	MaxStreams = 128
	// MaxTime is the longest test an iperf3 server takes, in seconds (MAX_TIME).
	MaxTime = 86400
	// MaxBlockSize is the largest block iperf3 writes (MAX_BLOCKSIZE).
	MaxBlockSize = 1 << 20
	// DefaultBlockSize is iperf3's block for TCP (DEFAULT_TCP_BLKSIZE).
	DefaultBlockSize = 128 << 10
)

// newCookie draws a test's cookie as iperf3's make_cookie does: 36
// characters of a 32-letter alphabet, then a NUL.
func newCookie() ([CookieSize]byte, error) {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var c [CookieSize]byte
	if _, err := rand.Read(c[:CookieSize-1]); err != nil {
		return c, fmt.Errorf("drawing the test's cookie: %w", err)
	}
	for i := range CookieSize - 1 {
		c[i] = alphabet[c[i]%byte(len(alphabet))]
	}
	return c, nil
}

// readState reads one state byte and, for SERVER_ERROR, the two numbers
// that follow it: the error comes back as a *ServerError.
func readState(r io.Reader) (State, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	st := State(int8(b[0]))
	if st != ServerErrorSt {
		return st, nil
	}
	var codes [8]byte
	if _, err := io.ReadFull(r, codes[:]); err != nil {
		return st, fmt.Errorf("reading the code of SERVER_ERROR: %w", noEOF(err))
	}
	return st, &ServerError{
		Code:  int(int32(binary.BigEndian.Uint32(codes[:4]))),
		Errno: int(int32(binary.BigEndian.Uint32(codes[4:]))),
	}
}

// noEOF turns an end of the stream in the middle of a message into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ErrFrame means a length-prefixed JSON document is malformed: a length
// of zero or over the bound, or text that is not a JSON object.
var ErrFrame = errors.New("malformed JSON frame")

// readFrame reads one length-prefixed document of at most limit bytes,
// allocating no more than its length says and only once that is known
// to be within the bound.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n == 0 || uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: a length of %d bytes (at most %d)", ErrFrame, n, limit)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("reading a %d-byte JSON frame: %w", n, noEOF(err))
	}
	return buf, nil
}

// writeFrame writes v as one length-prefixed document.
func writeFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(msg, uint32(len(body)))
	_, err = w.Write(append(msg, body...))
	return err
}

// params is what the client asks for (send_parameters). iperf3 3.12
// servers take a key's presence for true, so the flags are left out when
// false.
type params struct {
	TCP           bool   `json:"tcp"`
	Omit          int    `json:"omit"`
	Time          int    `json:"time"`
	Num           int64  `json:"num"`
	BlockCount    int    `json:"blockcount"`
	Parallel      int    `json:"parallel"`
	Reverse       bool   `json:"reverse,omitempty"`
	Window        int    `json:"window,omitempty"`
	Len           int    `json:"len"`
	FQRate        uint64 `json:"fqrate,omitempty"`
	PacingTimer   int    `json:"pacing_timer"`
	Congestion    string `json:"congestion,omitempty"`
	ClientVersion string `json:"client_version"`
}

// wireResults is either side's results (send_results, get_results).
type wireResults struct {
	CPUTotal             float64      `json:"cpu_util_total"`
	CPUUser              float64      `json:"cpu_util_user"`
	CPUSystem            float64      `json:"cpu_util_system"`
	SenderHasRetransmits int          `json:"sender_has_retransmits"`
	CongestionUsed       string       `json:"congestion_used,omitempty"`
	Streams              []wireStream `json:"streams"`
}

// wireStream is one stream of the results. Numbers are as cJSON prints
// them: integers, or in exponent form past 2^31.
type wireStream struct {
	ID             int     `json:"id"`
	Bytes          float64 `json:"bytes"`
	Retransmits    int64   `json:"retransmits"`
	Jitter         float64 `json:"jitter"`
	Errors         int64   `json:"errors"`
	OmittedErrors  int64   `json:"omitted_errors"`
	Packets        int64   `json:"packets"`
	OmittedPackets int64   `json:"omitted_packets"`
	StartTime      float64 `json:"start_time"`
	EndTime        float64 `json:"end_time"`
}

// peerStream is one stream of the server's results, checked.
type peerStream struct {
	ID          int
	Bytes       uint64
	Retransmits int64 // -1: not known
	Seconds     float64
}

// peerResults are the server's results, checked.
type peerResults struct {
	CPUPercent     float64
	HasRetransmits bool
	Congestion     string
	Streams        []peerStream
}

// maxSeconds bounds a stream's times in results: a day and a margin.
const maxSeconds = 2 * MaxTime

// parseResults checks the server's results: the keys iperf3 itself
// requires (get_results), finite non-negative figures, and at most
// streams streams with distinct ids. Every number is read as a float:
// iperf3 3.12 prints its -1 for "none" as 18446744073709551615.
func parseResults(data []byte, streams int) (*peerResults, error) {
	var raw struct {
		CPUTotal             *float64 `json:"cpu_util_total"`
		CPUUser              *float64 `json:"cpu_util_user"`
		CPUSystem            *float64 `json:"cpu_util_system"`
		SenderHasRetransmits *float64 `json:"sender_has_retransmits"`
		CongestionUsed       string   `json:"congestion_used"`
		Streams              []struct {
			ID          *int     `json:"id"`
			Bytes       *float64 `json:"bytes"`
			Retransmits *float64 `json:"retransmits"`
			StartTime   *float64 `json:"start_time"`
			EndTime     *float64 `json:"end_time"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: the results: %v", ErrFrame, err)
	}
	if raw.CPUTotal == nil || raw.CPUUser == nil || raw.CPUSystem == nil || raw.SenderHasRetransmits == nil || raw.Streams == nil {
		return nil, fmt.Errorf("%w: the results lack cpu_util_*, sender_has_retransmits or streams", ErrFrame)
	}
	if len(raw.Streams) > streams {
		return nil, fmt.Errorf("%w: the results have %d streams, the test %d", ErrFrame, len(raw.Streams), streams)
	}
	out := &peerResults{HasRetransmits: *raw.SenderHasRetransmits == 1, Congestion: raw.CongestionUsed}
	if c := *raw.CPUTotal; finite(c) && c >= 0 && c <= 100*1024 {
		out.CPUPercent = c
	}
	if len(out.Congestion) > 64 || strings.ContainsFunc(out.Congestion, func(r rune) bool { return r < ' ' || r > '~' }) {
		return nil, fmt.Errorf("%w: congestion_used %q is no congestion control's name", ErrFrame, out.Congestion)
	}
	seen := map[int]bool{}
	for i, s := range raw.Streams {
		if s.ID == nil || s.Bytes == nil || s.Retransmits == nil {
			return nil, fmt.Errorf("%w: stream %d of the results lacks id, bytes or retransmits", ErrFrame, i)
		}
		if seen[*s.ID] {
			return nil, fmt.Errorf("%w: stream id %d twice in the results", ErrFrame, *s.ID)
		}
		seen[*s.ID] = true
		b := *s.Bytes
		if !finite(b) || b < 0 || b >= math.MaxInt64 {
			return nil, fmt.Errorf("%w: stream %d: %v bytes", ErrFrame, *s.ID, b)
		}
		ps := peerStream{ID: *s.ID, Bytes: uint64(b), Retransmits: -1}
		if r := *s.Retransmits; finite(r) && r >= 0 && r <= math.MaxUint32 {
			ps.Retransmits = int64(r)
		}
		if s.StartTime != nil && s.EndTime != nil {
			d := *s.EndTime - *s.StartTime
			if !finite(d) || d < 0 || d > maxSeconds {
				return nil, fmt.Errorf("%w: stream %d: times %v to %v", ErrFrame, *s.ID, *s.StartTime, *s.EndTime)
			}
			ps.Seconds = d
		}
		out.Streams = append(out.Streams, ps)
	}
	return out, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// streamID is the id iperf3 gives the i-th stream of a test (from 0):
// 1, then 3, 4, 5... (iperf_add_stream keeps that quirk for
// compatibility, and the results exchange names streams by it).
func streamID(i int) int {
	if i == 0 {
		return 1
	}
	return i + 2
}
