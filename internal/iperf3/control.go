package iperf3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// control is the control connection, with the server's address for
// errors and the deadline of each wait.
type control struct {
	ctx     context.Context
	conn    net.Conn
	addr    string
	timeout time.Duration
}

// read reads the server's next state within the timeout. ACCESS_DENIED,
// SERVER_ERROR and SERVER_TERMINATE come back as errors.
func (c *control) read(waiting State) (State, error) {
	c.conn.SetReadDeadline(time.Now().Add(c.timeout))
	return c.readNoDeadline("waiting for " + waiting.String())
}

// readNoDeadline is read for a caller that has set the deadline.
func (c *control) readNoDeadline(doing string) (State, error) {
	st, err := readState(c.conn)
	if err != nil {
		return st, c.fail(doing, err)
	}
	switch st {
	case AccessDenied:
		return st, fmt.Errorf("iperf3 server %s: %w", c.addr, ErrBusy)
	case ServerTerminate:
		return st, fmt.Errorf("iperf3 server %s: %w", c.addr, ErrServerTerminated)
	}
	return st, nil
}

// expect reads the server's next state, which must be want.
func (c *control) expect(want State) error {
	st, err := c.read(want)
	if err != nil {
		return err
	}
	return c.check(st, want)
}

func (c *control) check(st, want State) error {
	if st != want {
		return fmt.Errorf("iperf3 server %s: said %v where iperf3 says %v: %w", c.addr, st, want, ErrProtocol)
	}
	return nil
}

// send writes one state within the timeout.
func (c *control) send(st State) error {
	c.conn.SetWriteDeadline(time.Now().Add(c.timeout))
	if _, err := c.conn.Write([]byte{byte(st)}); err != nil {
		return c.fail("sending "+st.String(), err)
	}
	return nil
}

// sendFrame writes one JSON document within the timeout.
func (c *control) sendFrame(what string, v any) error {
	c.conn.SetWriteDeadline(time.Now().Add(c.timeout))
	if err := writeFrame(c.conn, v); err != nil {
		return c.fail("sending the "+what, err)
	}
	return nil
}

// readResults reads the server's results within the timeout.
func (c *control) readResults(streams int) (*peerResults, error) {
	c.conn.SetReadDeadline(time.Now().Add(c.timeout))
	data, err := readFrame(c.conn, MaxResultsJSON)
	if err != nil {
		return nil, c.fail("reading the server's results", err)
	}
	res, err := parseResults(data, streams)
	if err != nil {
		return nil, c.fail("reading the server's results", err)
	}
	return res, nil
}

// fail says what went wrong with the server, naming it, as one of the
// package's errors where one fits.
func (c *control) fail(doing string, err error) error {
	return failure(c.ctx, c.addr, c.timeout, doing, err)
}

func failure(ctx context.Context, addr string, timeout time.Duration, doing string, err error) error {
	var se *ServerError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("iperf3 test toward %s: %s: %w", addr, doing, context.Cause(ctx))
	case errors.As(err, &se):
		return fmt.Errorf("iperf3 server %s: %w", addr, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("iperf3 server %s: no answer within %v %s: %w (%w)", addr, timeout, doing, ErrTimeout, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("iperf3 server %s: %s: %w (%w)", addr, doing, ErrServerClosed, err)
	case errors.Is(err, ErrFrame):
		return fmt.Errorf("iperf3 server %s: %s: %w: %w", addr, doing, ErrProtocol, err)
	}
	return fmt.Errorf("iperf3 server %s: %s: %w", addr, doing, err)
}

// dial connects to the server, saying which and why it could not.
func dial(ctx context.Context, d *net.Dialer, network, addr, what string) (*net.TCPConn, error) {
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		var ne net.Error
		if ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("iperf3 server %s: %s: no connection within %v: %w (%w)", addr, what, d.Timeout, ErrTimeout, err)
		}
		return nil, failure(ctx, addr, d.Timeout, what, err)
	}
	return conn.(*net.TCPConn), nil
}
