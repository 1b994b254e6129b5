package iperf3

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
)

// decodeAll reads what a server sends on the control connection, as the
// client does: states, SERVER_ERROR's codes, and the results frame after
// EXCHANGE_RESULTS, until the bytes end or do not decode.
func decodeAll(t *testing.T, data []byte, streams int) {
	r := bytes.NewReader(data)
	for {
		st, err := readState(r)
		var se *ServerError
		switch {
		case errors.Is(err, io.EOF):
			return
		case errors.As(err, &se):
			_ = se.Error()
			continue
		case err != nil:
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("state: %v: want only the end of the bytes", err)
			}
			return
		}
		_ = st.String()
		if st != ExchangeResults {
			continue
		}
		frame, err := readFrame(r, MaxResultsJSON)
		if err != nil {
			if !errors.Is(err, ErrFrame) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("frame: %v", err)
			}
			return
		}
		if len(frame) == 0 || len(frame) > MaxResultsJSON {
			t.Fatalf("a frame of %d bytes passed", len(frame))
		}
		res, err := parseResults(frame, streams)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("results: %v: want ErrFrame", err)
			}
			continue
		}
		if len(res.Streams) > streams || res.CPUPercent < 0 || math.IsNaN(res.CPUPercent) {
			t.Fatalf("results %+v of a %d-stream test passed", res, streams)
		}
		seen := map[int]bool{}
		for _, s := range res.Streams {
			if seen[s.ID] || s.Bytes >= math.MaxInt64 || s.Seconds < 0 || s.Seconds > maxSeconds || s.Retransmits < -1 || s.Retransmits > math.MaxUint32 {
				t.Fatalf("stream %+v passed", s)
			}
			seen[s.ID] = true
		}
	}
}

// FuzzDecode feeds the client's readers of the control connection (the
// state reader, the length-prefixed JSON frame reader and the results'
// checks) whatever a server might send. Seeds: testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(serverBytes(realResults))
	f.Add(serverBytes(fakeResults))
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAll(t, data, 4)
	})
}

// realResults are an iperf3 3.12 server's results of a reversed
// two-stream test, as it sent them (iperf3 --debug).
const realResults = `{"cpu_util_total":9.5531134516895566,"cpu_util_user":0,"cpu_util_system":9.5531134516895566,"sender_has_retransmits":1,"congestion_used":"bbr",` +
	`"streams":[{"id":1,"bytes":222822400,"retransmits":6,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.011217},` +
	`{"id":3,"bytes":218890240,"retransmits":7,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.011223}]}`

// serverBytes are a whole test as the server says it, with results.
func serverBytes(results string) []byte {
	b := []byte{byte(ParamExchange), byte(CreateStreams), byte(TestStart), byte(TestRunning), byte(ExchangeResults)}
	b = binary.BigEndian.AppendUint32(b, uint32(len(results)))
	b = append(b, results...)
	return append(b, byte(DisplayResults))
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    []byte
		streams int
		want    error
	}{
		{"real", serverBytes(realResults)[5:], 2, nil},
		{"zero length", []byte{0, 0, 0, 0}, 2, ErrFrame},
		{"length past the bound", []byte{0xff, 0xff, 0xff, 0xff}, 2, ErrFrame},
		{"cut short", []byte{0, 0, 0, 9, '{'}, 2, io.ErrUnexpectedEOF},
		{"not JSON", append([]byte{0, 0, 0, 3}, "abc"...), 2, ErrFrame},
		{"more streams than the test", serverBytes(realResults)[5:], 1, ErrFrame},
		{"negative bytes", frame(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":-5,"retransmits":-1}]}`), 2, ErrFrame},
		{"stream twice", frame(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":5,"retransmits":-1},{"id":1,"bytes":5,"retransmits":-1}]}`), 2, ErrFrame},
		{"time backwards", frame(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":5,"retransmits":-1,"start_time":3,"end_time":1}]}`), 2, ErrFrame},
		{"exponent bytes", frame(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":1.2e+16,"retransmits":18446744073709551615}]}`), 2, nil},
		{"control characters for a name", frame(`{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":1,"congestion_used":"bb\u001b[2J","streams":[]}`), 2, ErrFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := readFrame(bytes.NewReader(tc.data), MaxResultsJSON)
			if err == nil {
				_, err = parseResults(data, tc.streams)
			}
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func frame(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}

func TestReadState(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		want State
		code int
		err  error
	}{
		{[]byte{9}, ParamExchange, 0, nil},
		{[]byte{0xff}, AccessDenied, 0, nil},
		{[]byte{0xfe, 0, 0, 0, 121, 0, 0, 0, 0}, ServerErrorSt, CodeAccessDenied, ErrBusy},
		{[]byte{0xfe, 0, 0, 0, 8, 0, 0, 0, 105}, ServerErrorSt, CodeBufSize, nil},
		{[]byte{0xfe, 0, 0}, ServerErrorSt, 0, io.ErrUnexpectedEOF},
		{nil, 0, 0, io.EOF},
	} {
		st, err := readState(bytes.NewReader(tc.data))
		var se *ServerError
		if errors.As(err, &se) && se.Code != tc.code {
			t.Errorf("% x: code %d, want %d", tc.data, se.Code, tc.code)
		}
		if st != tc.want || (tc.err != nil && !errors.Is(err, tc.err)) || (tc.err == nil && tc.code == 0 && err != nil) {
			t.Errorf("% x: %v, %v; want %v, %v", tc.data, st, err, tc.want, tc.err)
		}
	}
	if (&ServerError{Code: CodeBufSize, Errno: 105}).Unwrap() == nil {
		t.Error("the server's errno is not kept")
	}
}
