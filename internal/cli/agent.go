package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/stamp"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/bind"
)

// defaultAgentData is an agent's data folder unless --data-dir says otherwise.
const defaultAgentData = "/var/lib/wanlab/agent"

func newAgentCmd() *cobra.Command {
	var (
		host, socket, dataDir string
		listen, policyFile    string
		auditFile             string
		testAddr, testPorts   string
		testAddr6             string
		tlsFiles              pki.Files
		maxRate, maxBytes     string
		lim                   = limits.Default
		diskCapped            bool
		diskRead              int64
		stampAddr, stampKey   string
		stampFrom             []string
	)
	c := &cobra.Command{
		Use:   "agent --socket PATH | --listen ADDR:PORT --cert FILE --key FILE --ca FILE [--policy FILE]",
		Short: "Run the measurement agent of a host: in a test-bed (testbed up starts one), or on a real host",
		Long: `Run the agent that carries out measurements on this host at a controller's request.
It runs nothing but wanlab's own workloads, keeps every file it makes or receives in its
data folder (it names them itself: no request carries a path), serves several tests at
once, and refuses a request over its limits, naming the limit.

In an emulated test-bed, testbed up starts one inside every host with --socket: a Unix
socket, mode 0600, that only root or the agent's own user may use.

On a real host, --listen serves the same API over TCP with TLS 1.3 and mutual
authentication: only controllers whose certificate the CA of --ca signed may connect,
and the policy (--policy, docs/policy.md) says which of them may run which tests, toward
which peers, within which limits. Without --policy, every controller the CA signed may
run the measurements (throughput, probe, transfer, disk) with the limits of the flags.
Test traffic goes directly between agents, on --test-address and --test-ports; each test
has a token that the receiving agent checks, and an agent sends nothing more toward a peer
that does not prove it is the test's listener. Every request and decision is written to
the audit log (JSON lines). SIGHUP reloads the certificate, the CA, the policy and the
audit log's file without ending the tests running. See docs/security.md and docs/deploy.md.`,
		Example: `  wanlab agent --host server --socket /tmp/agent.sock --data-dir /var/lib/wanlab/agent --max-streams 64
  wanlab agent --host cnaf --listen 10.1.0.1:7400 --cert pki/cnaf.crt --key pki/cnaf.key --ca pki/ca.crt \
      --policy /etc/wanlab/policy.yaml --audit /var/log/wanlab/audit.log --test-ports 5201-5299
  wanlab agent --host cern --listen [2001:db8:2::9]:7400 --cert pki/cern.crt --key pki/cern.key --ca pki/ca.crt`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			if (socket == "") == (listen == "") {
				return usagef("give either --socket PATH (a test-bed host) or --listen ADDR:PORT (a real host)")
			}
			rate, err := units.ParseRate(maxRate)
			if err != nil {
				return usagef("--max-rate: %v", err)
			}
			size, err := units.ParseSize(maxBytes)
			if err != nil {
				return usagef("--max-bytes: %v", err)
			}
			lim.MaxRate, lim.MaxBytes = float64(rate), int64(size)
			if err := lim.Validate(); err != nil {
				return usagef("limits: %v", err)
			}
			test, named, err := testLocal(testAddr, testAddr6)
			if err != nil {
				return err
			}
			if testPorts != "" {
				if test.First, test.Last, err = bind.ParseRange(testPorts); err != nil {
					return usagef("--test-ports: %v", err)
				}
			}
			if host == "" {
				host, _ = os.Hostname()
			}
			data, err := datadir.Open(dataDir)
			if err != nil {
				return fmt.Errorf("agent's data folder: %w", err)
			}
			defer data.Close()
			ctx := c.Context()
			st, err := stampFlags(stampAddr, stampFrom, stampKey)
			if err != nil {
				return err
			}
			srv := &agent.Server{Host: host, Version: Version, Limits: lim, DiskCapped: diskCapped || diskRead > 0, DiskReadBps: diskRead, Data: data, HostCPU: ownCgroupCPU(),
				TestAddress: named[0], TestAddress6: named[1]}
			if st != nil {
				stop, err := serveSTAMP(c, srv, stampAddr, *st)
				if err != nil {
					return err
				}
				defer stop()
			}
			if socket != "" {
				srv.Test = test
				fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: listening on %s, data folder %s\n", host, socket, data.Path())
				return srv.ServeSocket(ctx, socket)
			}
			return serveNetwork(c, srv, listen, test, tlsFiles, policyFile, auditFile)
		},
	}
	c.Flags().StringVar(&host, "host", "", "the host's name, as reported to controllers (default: hostname)")
	c.Flags().StringVar(&socket, "socket", "", "Unix socket to listen on (a test-bed host)")
	c.Flags().StringVar(&listen, "listen", "", "ADDR:PORT to serve controllers on, over TLS 1.3 (a real host)")
	c.Flags().StringVar(&tlsFiles.Cert, "cert", "", "the agent's certificate (wanlab pki issue NAME --role agent)")
	c.Flags().StringVar(&tlsFiles.Key, "key", "", "the agent's private key")
	c.Flags().StringVar(&tlsFiles.CA, "ca", "", "the CA whose controllers may connect")
	c.Flags().StringVar(&policyFile, "policy", "", "the policy: who may run what, toward where, within which limits (docs/policy.md); default: any controller the CA signed, the flags' limits")
	c.Flags().StringVar(&auditFile, "audit", "-", "the audit log (JSON lines, appended, 0600); - for standard error")
	c.Flags().StringVar(&testAddr, "test-address", "", "the address test listeners open on, IPv4 or IPv6 (default: the --listen address; every address, both families, if that is a wildcard)")
	c.Flags().StringVar(&testAddr6, "test-address6", "", "a dual-stack host's IPv6 test address, named to controllers beside its IPv4 one (--test-address, else the --listen address): test listeners then open on every address, both families")
	c.Flags().StringVar(&testPorts, "test-ports", "", "FIRST-LAST: the ports test listeners open on, for firewalls (default: any free port)")
	c.Flags().StringVar(&dataDir, "data-dir", defaultAgentData, "the agent's own folder for the files it makes, receives and sends (made 0700; refused if another user could change it)")
	c.Flags().DurationVar(&lim.MaxDuration, "max-duration", limits.Default.MaxDuration, "refuse tests longer than this")
	c.Flags().IntVar(&lim.MaxStreams, "max-streams", limits.Default.MaxStreams, "refuse tests with more streams, and more streams than this at once")
	c.Flags().StringVar(&maxRate, "max-rate", "10Gbit", "refuse UDP tests faster than this")
	c.Flags().StringVar(&maxBytes, "max-bytes", "1TiB", "refuse tests that move or store more than this")
	c.Flags().IntVar(&lim.MaxConnections, "max-connections", limits.Default.MaxConnections, "refuse workload roles with more connections, clients or workers")
	c.Flags().IntVar(&lim.MaxTests, "max-tests", limits.Default.MaxTests, "refuse a test while this many run")
	c.Flags().BoolVar(&diskCapped, "disk-capped", false, "the host's disk is rate-capped: transfers bypass the page cache and disk tests fsync")
	c.Flags().Int64Var(&diskRead, "disk-read-rate", 0, "the host's disk read cap in bytes/s, which a serial transfer's reads each take their time at (implies --disk-capped)")
	c.Flags().StringVar(&stampAddr, "stamp", "", "ADDR:PORT to answer STAMP (RFC 8762) and TWAMP-light test packets on, as :862, for senders of --stamp-from")
	c.Flags().StringSliceVar(&stampFrom, "stamp-from", nil, "the networks (CIDR) whose STAMP packets are answered: 0.0.0.0/0,::/0 for any (required with --stamp)")
	c.Flags().StringVar(&stampKey, "stamp-key", "", "a file holding the STAMP key: authenticated mode (HMAC-SHA-256), up to 256 bytes; default unauthenticated")
	return c
}

// stampFlags reads --stamp, --stamp-from and --stamp-key: nil without
// --stamp.
func stampFlags(addr string, from []string, keyFile string) (*agent.STAMP, error) {
	if addr == "" {
		if len(from) > 0 || keyFile != "" {
			return nil, usagef("--stamp-from and --stamp-key need --stamp ADDR:PORT")
		}
		return nil, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usagef("--stamp %q: give ADDR:PORT, as :862 or [2001:db8::1]:862", addr)
	}
	if len(from) == 0 {
		return nil, usagef("--stamp needs --stamp-from: the networks whose packets are answered (0.0.0.0/0,::/0 for any)")
	}
	st := &agent.STAMP{}
	for _, f := range from {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, usagef("--stamp-from %q: not a network (CIDR) or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		st.From = append(st.From, p.Masked())
	}
	if keyFile != "" {
		key, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, usagef("--stamp-key: %v", err)
		}
		if st.Key = bytes.TrimRight(key, "\r\n"); len(st.Key) == 0 || len(st.Key) > stamp.MaxKeyLen {
			return nil, usagef("--stamp-key %s: %d bytes: give 1 to %d", keyFile, len(st.Key), stamp.MaxKeyLen)
		}
	}
	return st, nil
}

// serveSTAMP answers STAMP packets on addr until stop is called or the
// verb's context ends.
func serveSTAMP(c *cobra.Command, srv *agent.Server, addr string, st agent.STAMP) (stop func(), err error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, usagef("--stamp %q: %v", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("agent on %s: STAMP reflector: %w", srv.Host, err)
	}
	ctx, cancel := context.WithCancel(c.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.ServeSTAMP(ctx, conn, st); err != nil {
			fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: %v\n", srv.Host, err)
		}
	}()
	fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: answering STAMP on %s from %v\n", srv.Host, conn.LocalAddr(), st.From)
	return func() { cancel(); <-done; conn.Close() }, nil
}

// serveNetwork serves the agent over TLS on listen until the verb's
// context ends, reloading its certificate, policy and audit log on SIGHUP.
func serveNetwork(c *cobra.Command, srv *agent.Server, listen string, test bind.Local, files pki.Files, policyFile, auditFile string) error {
	if err := files.Check(); err != nil {
		return usagef("--listen needs --cert, --key and --ca: %v", err)
	}
	lhost, _, err := net.SplitHostPort(listen)
	if err != nil {
		return usagef("--listen %q: give ADDR:PORT, as 10.1.0.1:7400, [2001:db8::1]:7400 or :7400 (every address, both families)", listen)
	}
	if ip := net.ParseIP(lhost); ip != nil && !ip.IsUnspecified() {
		switch {
		case srv.TestAddress6 == "" && test.Addr == "":
			test.Addr = lhost
		case srv.TestAddress6 != "" && srv.TestAddress == "" && ip.To4() != nil:
			srv.TestAddress = lhost // a dual-stack agent's IPv4 one
		}
	}
	srv.Test = test
	loadPolicy := func() (*policy.Policy, error) {
		if policyFile == "" {
			return policy.Default(srv.Limits), nil
		}
		return policy.Load(policyFile, srv.Limits)
	}
	pol, err := loadPolicy()
	if err != nil {
		return err
	}
	srv.SetPolicy(pol)
	auditLog, err := agent.OpenAudit(auditFile)
	if err != nil {
		return err
	}
	defer auditLog.Close()
	srv.Audit = auditLog.Write
	side, err := pki.NewServer(files)
	if err != nil {
		return fmt.Errorf("the agent's TLS files: %w", err)
	}
	side.Refused = func(remote net.Addr, why string) {
		auditLog.Write(audit.Entry{Time: time.Now().UTC(), Remote: remote.String(), Decision: "tls", Reason: why})
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("agent on %s: %w", srv.Host, err)
	}
	ctx := c.Context()
	hangupReloads.Store(true)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			var errs []error
			if err := side.Reload(); err != nil {
				errs = append(errs, err)
			}
			if p, err := loadPolicy(); err != nil {
				errs = append(errs, err)
			} else {
				srv.SetPolicy(p)
			}
			if err := auditLog.Reopen(); err != nil {
				errs = append(errs, err)
			}
			if err := errors.Join(errs...); err != nil {
				fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: reload on SIGHUP: %v (what failed to load keeps its old version)\n", srv.Host, err)
			} else {
				fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: reloaded certificate, CA, policy and audit log\n", srv.Host)
			}
		}
	}()
	tests := test.String()
	if srv.TestAddress6 != "" {
		tests += fmt.Sprintf(" (named %s)", strings.TrimPrefix(srv.TestAddress+" and "+srv.TestAddress6, " and "))
	}
	fmt.Fprintf(c.ErrOrStderr(), "wanlab agent %s: listening on %s (TLS 1.3, mutual), tests on %s, policy %s, data folder %s\n",
		srv.Host, ln.Addr(), tests, pol.Source, srv.Data.Path())
	return srv.ServeTLS(ctx, ln, side.Config())
}

// ownCgroupCPU reads the CPU used by the cgroup this process is in (the
// test-bed host's), or nil where cgroups cannot say.
func ownCgroupCPU() func() (time.Duration, error) {
	cg, err := cgroup.Detect()
	if err != nil || cg.Version == cgroup.None {
		return nil
	}
	group, err := cg.Own()
	if err != nil {
		return nil
	}
	return func() (time.Duration, error) { return cg.Usage(group) }
}

// testLocal reads --test-address, an IPv4 or IPv6 address (bare or in
// brackets) or "" for every address, and --test-address6, a dual-stack
// host's IPv6 one. With --test-address6 the listeners open on every
// address, and named are the addresses the agent names, IPv4 and IPv6.
func testLocal(addr, addr6 string) (test bind.Local, named [2]string, err error) {
	var a netip.Addr
	if addr != "" {
		if a, err = ipArg(addr); err != nil {
			return test, named, usagef("--test-address %q: give an IP address, as 10.1.0.1 or 2001:db8::1", addr)
		}
	}
	if addr6 == "" {
		if a.IsValid() {
			test.Addr = a.String()
		}
		return test, named, nil
	}
	a6, err := ipArg(addr6)
	switch {
	case err != nil || !a6.Is6():
		return test, named, usagef("--test-address6 %q: give an IPv6 address, as 2001:db8::1", addr6)
	case a.IsValid() && !a.Is4():
		return test, named, usagef("--test-address %s is IPv6, and --test-address6 names the IPv6 one: give the IPv4 one there, or leave --test-address6 out", addr)
	case a.IsValid():
		named[0] = a.String()
	}
	named[1] = a6.String()
	return test, named, nil
}
