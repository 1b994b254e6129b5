package iperf3

import (
	"errors"
	"fmt"
	"syscall"
)

// The ways a test against an iperf3 server fails, for errors.Is. Each
// error names the server's address.
var (
	// ErrBusy: the server is running another test and answered
	// ACCESS_DENIED (an iperf3 server runs one test at a time).
	ErrBusy = errors.New("the server is busy running a test (it answered ACCESS_DENIED); try again later")
	// ErrTimeout: the server did not connect or did not answer in time
	// (a silent port, a filtered address, a stuck server), a test ended
	// by bytes did not move them within Options.MaxDuration, or the
	// server's own timer ended the test.
	ErrTimeout = errors.New("timed out")
	// ErrServerClosed: the server closed a connection in the middle of
	// the test.
	ErrServerClosed = errors.New("the server closed the connection")
	// ErrServerTerminated: the server said SERVER_TERMINATE (it was
	// stopped during the test).
	ErrServerTerminated = errors.New("the server was terminated during the test (SERVER_TERMINATE)")
	// ErrProtocol: the server said something iperf3's protocol has no
	// place for: not an iperf3 server, or a broken one.
	ErrProtocol = errors.New("not iperf3's protocol (is the port an iperf3 server?)")
	// ErrStalled: no data moved on any stream for Options.Timeout.
	ErrStalled = errors.New("no data moved")
)

// ServerError is the SERVER_ERROR an iperf3 server sends before it gives
// up a test: its own error code (i_errno) and the system's errno (0 if
// none).
type ServerError struct {
	Code  int
	Errno int
}

// The server's error codes wanlab names (iperf_api.h). A server that
// requires iperf3's authentication (--rsa-private-key-path), which wanlab
// does not speak, answers CodeAuthTest.
const (
	CodeDuration        = 5
	CodeNumStreams      = 6
	CodeBlockSize       = 7
	CodeBufSize         = 8
	CodeMSS             = 10
	CodeRecvParams      = 114
	CodeRecvResults     = 117
	CodeClientTerm      = 119
	CodeAccessDenied    = 121
	CodeSetBuf          = 124
	CodeSetWindowSize   = 130
	CodeSetCongestion   = 134
	CodeSetBuf2         = 141
	CodeAuthTest        = 142
	CodeNoMsg           = 144
	CodeDurationExpired = 160
	CodeStreamAccept    = 204
	CodeStreamRead      = 206
	CodeStreamID        = 208
)

// serverMessages are iperf3's own words for its codes (iperf_error.c),
// for those a server is likely to send a client.
var serverMessages = map[int]string{
	CodeDuration:        "test duration valid values are 0 to 86400 seconds",
	CodeNumStreams:      "invalid number of parallel streams (min = 1, max = 128)",
	CodeBlockSize:       "block size too large",
	CodeBufSize:         "socket buffer size too large",
	CodeMSS:             "TCP MSS too large",
	13:                  "an option you are trying to set is not implemented yet",
	27:                  "total required bandwidth is larger than server limit",
	37:                  "client's requested duration exceeds the server's maximum permitted limit",
	101:                 "test initialization failed",
	102:                 "unable to start listener for connections",
	104:                 "unable to accept connection from client",
	106:                 "unable to receive cookie at server",
	107:                 "unable to write to the control socket",
	108:                 "unable to read from the control socket",
	109:                 "control socket has closed unexpectedly",
	110:                 "received an unknown control message",
	111:                 "unable to send control message",
	112:                 "unable to receive control message",
	CodeRecvParams:      "unable to receive parameters from client",
	115:                 "unable to package results",
	116:                 "unable to send results",
	CodeRecvResults:     "unable to receive results",
	118:                 "select failed",
	CodeClientTerm:      "the client has terminated",
	120:                 "the server has terminated",
	CodeAccessDenied:    "the server is busy running a test",
	122:                 "unable to set TCP/SCTP NODELAY",
	123:                 "unable to set TCP/SCTP MSS",
	CodeSetBuf:          "unable to set socket buffer size",
	CodeSetWindowSize:   "unable to set socket window size",
	131:                 "protocol does not exist",
	CodeSetCongestion:   "unable to set TCP_CONGESTION",
	CodeSetBuf2:         "socket buffer size not set correctly",
	CodeAuthTest:        "test authorization failed",
	CodeNoMsg:           "idle timeout for receiving data",
	150:                 "unable to create thread",
	CodeDurationExpired: "server test duration expired",
	200:                 "unable to create a new stream",
	201:                 "unable to initialize stream",
	202:                 "unable to start stream listener",
	CodeStreamAccept:    "unable to accept stream connection",
	205:                 "unable to write to stream socket",
	CodeStreamRead:      "unable to read from stream socket",
	207:                 "stream socket has closed unexpectedly",
	CodeStreamID:        "stream has an invalid id",
}

// Message is the server's error in iperf3's words, or its number.
func (e *ServerError) Message() string {
	if m, ok := serverMessages[e.Code]; ok {
		return m
	}
	return fmt.Sprintf("iperf3 error %d", e.Code)
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("server error: %s (iperf3 error %d)", e.Message(), e.Code)
	if e.Errno > 0 {
		s += fmt.Sprintf(": errno %d (%v, as Linux numbers it)", e.Errno, syscall.Errno(e.Errno))
	}
	return s
}

// Is makes a server's "access denied" code ErrBusy, and its duration
// timer ErrTimeout.
func (e *ServerError) Is(target error) bool {
	switch target {
	case ErrBusy:
		return e.Code == CodeAccessDenied
	case ErrTimeout:
		return e.Code == CodeDurationExpired || e.Code == CodeNoMsg
	}
	return false
}

// Unwrap is the server's errno, for errors.Is(err, syscall.ENOBUFS).
func (e *ServerError) Unwrap() error {
	if e.Errno > 0 {
		return syscall.Errno(e.Errno)
	}
	return nil
}
