package testbed

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/proc"
)

// NetnsDir is where named namespaces live, as with `ip netns`.
const NetnsDir = "/run/netns"

// tunQueueLen is the hosts' TUN transmit queue. It is far above what the
// engine lets build up, so that a drop there means the engine fell behind;
// such drops are counted and shown as test-bed drops, never as the model's.
const tunQueueLen = 10000

// inNetns runs fn on an OS thread that has entered namespace ns.
func inNetns(ns netns.NsHandle, fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("getting the current network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace: %w", err)
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: the runtime destroys it with the goroutine
		// rather than reuse a thread in the wrong namespace.
		return errors.Join(fnErr, fmt.Errorf("returning to the original namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return fnErr
}

// shareNetnsDir makes NetnsDir a shared mount point, as `ip netns add`
// does: a bind mount of itself, shared. Were it left a plain folder, the
// first `ip netns add` while a test-bed is up would bind-mount it over the
// test-bed's namespaces, hiding them from their teardown.
func shareNetnsDir() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return err
	}
	err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) { // not a mount point yet
		if err = unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("making %s a shared mount point, as ip netns does: %w", NetnsDir, err)
	}
	return nil
}

// createNetns creates the named namespace (visible to `ip netns`).
func createNetns(name string) (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return 0, fmt.Errorf("getting the current network namespace: %w", err)
	}
	defer orig.Close()
	ns, err := netns.NewNamed(name)
	// NewNamed may fail after it has moved this thread into a new namespace.
	if serr := netns.Set(orig); serr != nil {
		panic(fmt.Sprintf("cannot return to the original network namespace: %v", serr))
	}
	if err != nil {
		return 0, fmt.Errorf("creating network namespace %s: %w", name, err)
	}
	return ns, nil
}

// deleteNetns removes a named namespace; the kernel frees it once no process is inside.
func deleteNetns(name string) error {
	path := filepath.Join(NetnsDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// openTUN creates the TUN device inside ns and returns its non-blocking fd.
// The device lives as long as the fd: if the engine dies, so does the device.
// With offloads, each packet on the fd has a virtio-net header and the
// host hands over TCP (and, where the kernel has it, UDP) super-packets
// of up to 64 KB, unsegmented and with partial checksums; without, whole IP
// packets no larger than the MTU, segmented and checksummed.
//
// A host with an IPv6 address keeps IPv6 on the device, but neither
// solicits routers, takes their advertisements, probes for duplicate
// addresses nor makes a link-local address: the engine routes none of
// that, and it would only count as unroutable.
func openTUN(ns netns.NsHandle, offloads, ipv6 bool) (int, error) {
	fd := -1
	err := inNetns(ns, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("opening /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(Device)
		if err != nil {
			return err
		}
		flags := uint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if offloads {
			flags |= unix.IFF_VNET_HDR
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			return fmt.Errorf("creating TUN device %s: %w", Device, err)
		}
		if offloads {
			if err := setOffloads(fd); err != nil {
				return err
			}
		}
		conf := "/proc/sys/net/ipv6/conf/" + Device + "/"
		if !ipv6 {
			// IPv6 would only add router solicitations the engine cannot route.
			os.WriteFile(conf+"disable_ipv6", []byte("1"), 0o644)
			return nil
		}
		for _, kv := range [][2]string{{"accept_ra", "0"}, {"router_solicitations", "0"}, {"accept_dad", "0"}, {"dad_transmits", "0"}, {"addr_gen_mode", "1"}} {
			if err := os.WriteFile(conf+kv[0], []byte(kv[1]), 0o644); err != nil {
				return fmt.Errorf("IPv6 on %s: sysctl %s: %w", Device, kv[0], err)
			}
		}
		return nil
	})
	if err != nil && fd >= 0 {
		unix.Close(fd)
		fd = -1
	}
	return fd, err
}

// setOffloads lets the host hand over checksum-partial TCP super-packets,
// and UDP ones where the kernel segments UDP (Linux 6.2 and later).
func setOffloads(fd int) error {
	tcp := linkemu.TunCsum | linkemu.TunTSO4 | linkemu.TunTSO6
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tcp|linkemu.TunUSO4|linkemu.TunUSO6); err == nil {
		return nil
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, tcp); err != nil {
		return fmt.Errorf("setting offloads on TUN device %s: %w", Device, err)
	}
	return nil
}

// configureHost sets up loopback and the TUN device of a host: MTU, queue,
// address and one route per reachable peer with that path's MTU.
func configureHost(ns netns.NsHandle, h Host) error {
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", h.Netns, err)
	}
	defer nl.Close()
	lo, err := nl.LinkByName("lo")
	if err == nil {
		err = nl.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("bringing up lo in %s: %w", h.Netns, err)
	}
	tun, err := nl.LinkByName(Device)
	if err != nil {
		return fmt.Errorf("finding %s in %s: %w", Device, h.Netns, err)
	}
	addrs := hostAddrs(h.Addr, h.Addr6)
	steps := []struct {
		what string
		do   func() error
	}{
		{"setting MTU", func() error { return nl.LinkSetMTU(tun, h.MTU) }},
		{"setting txqueuelen", func() error { return nl.LinkSetTxQLen(tun, tunQueueLen) }},
		{"adding address", func() error {
			for _, a := range addrs {
				na := &netlink.Addr{IPNet: hostNet(a)}
				if a.Is6() {
					na.Flags = unix.IFA_F_NODAD
				}
				if err := nl.AddrAdd(tun, na); err != nil {
					return fmt.Errorf("%s: %w", a, err)
				}
			}
			return nil
		}},
		{"bringing the device up", func() error { return nl.LinkSetUp(tun) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("%s of %s in %s: %w", s.what, Device, h.Netns, err)
		}
	}
	for _, r := range h.Routes {
		for _, peer := range hostAddrs(r.Addr, r.Addr6) {
			i := slices.IndexFunc(addrs, func(a netip.Addr) bool { return a.Is6() == peer.Is6() })
			if i < 0 {
				continue
			}
			src := addrs[i]
			route := &netlink.Route{
				LinkIndex: tun.Attrs().Index,
				Dst:       hostNet(peer),
				Src:       src.AsSlice(),
				Scope:     netlink.SCOPE_LINK,
				MTU:       r.MTU,
			}
			if peer.Is6() {
				route.Scope = netlink.SCOPE_UNIVERSE // IPv6 routes have no scope
			}
			if err := nl.RouteAdd(route); err != nil {
				return fmt.Errorf("adding route to %s (%s) in %s: %w", r.Peer, peer, h.Netns, err)
			}
		}
	}
	return nil
}

// hostAddrs are a host's addresses: addr, and addr6 if it is another
// (addr is the IPv6 one of an IPv6-only host), in that order.
func hostAddrs(addr, addr6 string) []netip.Addr {
	out := []netip.Addr{netip.MustParseAddr(addr)}
	if addr6 != "" && addr6 != addr {
		out = append(out, netip.MustParseAddr(addr6))
	}
	return out
}

// hostNet is the network of one address: a /32 or a /128.
func hostNet(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}

// applySysctls sets network sysctls inside a host's namespace. Only the
// thread that entered the namespace sees its /proc/sys/net.
func applySysctls(ns netns.NsHandle, h Host) error {
	if len(h.Sysctl) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(h.Sysctl))
	return inNetns(ns, func() error {
		for _, k := range keys {
			path := "/proc/sys/" + strings.ReplaceAll(k, ".", "/")
			if err := os.WriteFile(path, []byte(h.Sysctl[k]), 0o644); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("sysctl %s: no such setting in a network namespace", k)
				}
				if k == "net.ipv4.tcp_congestion_control" && errors.Is(err, fs.ErrPermission) {
					allowed, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
					return fmt.Errorf("sysctl %s = %q: a namespace may only default to an algorithm in the machine's net.ipv4.tcp_allowed_congestion_control (now %q); add it there with sysctl -w, or choose it per connection (iperf3 -C)",
						k, h.Sysctl[k], strings.TrimSpace(string(allowed)))
				}
				return fmt.Errorf("sysctl %s = %q: %w", k, h.Sysctl[k], err)
			}
		}
		return nil
	})
}

// tunCounters reads the kernel's drop counters of a host's TUN device: TX
// drops are packets the host sent that the engine did not read in time.
func tunCounters(nsName string) (txDropped, rxDropped uint64, err error) {
	ns, err := netns.GetFromName(nsName)
	if err != nil {
		return 0, 0, err
	}
	defer ns.Close()
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		return 0, 0, err
	}
	defer nl.Close()
	link, err := nl.LinkByName(Device)
	if err != nil {
		return 0, 0, err
	}
	st := link.Attrs().Statistics
	if st == nil {
		return 0, 0, nil
	}
	return st.TxDropped, st.RxDropped, nil
}

// netnsInode returns the inode that identifies a named namespace.
func netnsInode(name string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(NetnsDir, name), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// processesIn lists the processes (other than this one) whose network
// namespace is one of the given inodes.
func processesIn(inodes map[uint64]bool) []int {
	if len(inodes) == 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		link, err := os.Readlink("/proc/" + e.Name() + "/ns/net")
		if err != nil {
			continue
		}
		ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]"), 10, 64)
		if err == nil && inodes[ino] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAll asks processes to stop, then kills those still there after grace.
func killAll(pids []int, grace time.Duration) {
	if len(pids) == 0 {
		return
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		alive := 0
		for _, pid := range pids {
			if proc.Alive(pid) {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range pids {
		for i := 0; i < 100 && proc.Alive(pid); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// nsHandle opens a host's namespace by name.
func nsHandle(name string) (netns.NsHandle, error) {
	ns, err := netns.GetFromName(name)
	if err != nil {
		return 0, fmt.Errorf("opening network namespace %s: %w", name, err)
	}
	return ns, nil
}
