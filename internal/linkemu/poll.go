package linkemu

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// poller waits until some of its fds are readable or a timeout in
// nanoseconds passes. It uses epoll_pwait2 (Linux 5.11), whose cost does not
// grow with the number of fds: with ppoll, which checks every fd on every
// call, waiting took two thirds of the engine's CPU on a test-bed of 32
// hosts. Where the kernel lacks it, ppoll.
type poller struct {
	epfd    int // -1 for ppoll
	events  []unix.EpollEvent
	pollfds []unix.PollFd
	ready   []readyFD
}

// readyFD is one fd that is readable, or failed, by its index among the poller's.
type readyFD struct {
	index  int
	failed bool // closed or in error, with nothing left to read
}

func newPoller(fds []int) (*poller, error) {
	p := &poller{epfd: -1}
	for _, fd := range fds {
		p.pollfds = append(p.pollfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return p, nil
	}
	for i, fd := range fds {
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}); err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("linkemu: epoll: %w", err)
		}
	}
	p.epfd, p.events = epfd, make([]unix.EpollEvent, len(fds))
	return p, nil
}

// wait returns the fds that are readable (or failed) within timeout ns;
// none when it passed or a signal came.
func (p *poller) wait(timeout int64) ([]readyFD, error) {
	p.ready = p.ready[:0]
	ts := unix.NsecToTimespec(timeout)
	if p.epfd >= 0 {
		// A raw system call: the Go runtime does not hand the thread's P
		// to another thread while it sleeps, so its monitor does not wake
		// every 20 us to retake it (a tenth of the engine's CPU at 100
		// Mbit/s). A signal (the runtime's preemption) ends the wait early.
		n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd), uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
		switch {
		case errno == unix.ENOSYS:
			unix.Close(p.epfd)
			p.epfd = -1 // an older kernel: ppoll from now on
		case errno == unix.EINTR:
			return nil, nil
		case errno != 0:
			return nil, fmt.Errorf("linkemu: epoll_pwait2: %w", errno)
		default:
			for _, ev := range p.events[:n] {
				failed := ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 && ev.Events&unix.EPOLLIN == 0
				p.ready = append(p.ready, readyFD{index: int(ev.Fd), failed: failed})
			}
			return p.ready, nil
		}
	}
	n, err := unix.Ppoll(p.pollfds, &ts, nil)
	if errors.Is(err, unix.EINTR) || n <= 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("linkemu: ppoll: %w", err)
	}
	for i, pf := range p.pollfds {
		if re := pf.Revents; re != 0 {
			failed := re&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 && re&unix.POLLIN == 0
			p.ready = append(p.ready, readyFD{index: i, failed: failed})
		}
	}
	return p.ready, nil
}

func (p *poller) close() {
	if p.epfd >= 0 {
		unix.Close(p.epfd)
	}
}

// rawRead and rawWrite are read(2) and write(2) on a port's non-blocking
// fd as raw system calls. They never block, so the runtime need not hand
// the thread's P to another thread around them, and its monitor is not
// kept waking to retake it (a few percent of the engine's CPU on many
// slow links).
func rawRead(fd int, p []byte) (int, error) {
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) error {
	_, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return errno
	}
	return nil
}
