// Package unixsock listens on Unix sockets that only this process's user
// (and root) can use: the socket is mode 0600 whatever the umask, a stale
// socket is replaced but never any other kind of file, and every connection's
// peer credentials (SO_PEERCRED) are checked before it is served.
package unixsock

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotSocket means the path holds a file that is not a socket.
var ErrNotSocket = errors.New("exists and is not a socket")

// Listen listens on the socket at path. A socket left there by a process
// that died is removed first; any other file is an error, never removed.
func Listen(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s %w: remove it or choose another path", path, ErrNotSocket)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another process is listening there", path)
		}
		os.Remove(path)
	}
	// The socket is created with the umask's mode: a restrictive umask
	// while binding leaves no moment in which others may connect.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return &listener{Listener: ln, uid: uint32(os.Geteuid())}, nil
}

// listener accepts only peers of this user or root.
type listener struct {
	net.Listener
	uid uint32
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := PeerUID(c)
		if err == nil && (uid == 0 || uid == l.uid) {
			return c, nil
		}
		log.Printf("refused a connection on %s from user %d (%v): only user %d or root may connect", l.Addr(), uid, err, l.uid)
		c.Close()
	}
}

// PeerUID returns the user id of the process at the other end of a Unix
// socket connection, as the kernel recorded it when it connected.
func PeerUID(c net.Conn) (uint32, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	return cred.Uid, nil
}
