package cli

import (
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/wanlab/wanlab/internal/pki"
)

func newPKICmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pki",
		Short: "Make a certificate authority and certificates for agents and controllers on real hosts",
		Long: `Agents on real hosts and their controllers authenticate each other with certificates
(TLS 1.3, mutual). pki init makes a certificate authority for a lab or a collaboration;
pki issue signs a certificate for an agent or a controller with it. Private keys are
written 0600, and nothing is overwritten. A site that has its own CA may use its
certificates instead: an agent's needs server use and the names controllers dial it by,
a controller's needs client use.`,
		Args: args(cobra.NoArgs),
	}
	c.AddCommand(newPKIInitCmd(), newPKIIssueCmd())
	return c
}

func newPKIInitCmd() *cobra.Command {
	var name string
	c := &cobra.Command{
		Use:     "init DIR",
		Short:   "Create a certificate authority: DIR/ca.crt and DIR/ca.key",
		Example: `  wanlab pki init pki`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if err := pki.Init(a[0], name); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "CA %q: %s (give it to every agent and controller), %s (keep it offline: it signs)\n",
				name, filepath.Join(a[0], pki.CACert), filepath.Join(a[0], pki.CAKey))
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "wanlab CA", "the CA's name, in its certificate")
	return c
}

func newPKIIssueCmd() *cobra.Command {
	var (
		dir, role string
		dns       []string
		ips       []string
		days      int
	)
	c := &cobra.Command{
		Use:   "issue NAME --dir DIR --role agent|controller [--ip IP]... [--dns NAME]...",
		Short: "Issue a key and certificate: DIR/NAME.crt and DIR/NAME.key",
		Long: `Issue a certificate for NAME, signed by the CA in DIR. NAME is its common name: the
identity policies name as cn:NAME. An agent's certificate must hold the names or addresses
controllers dial it by (--dns, --ip); a controller's needs none.`,
		Example: `  wanlab pki issue cnaf --dir pki --role agent --ip 10.1.0.1 --dns dtn.cnaf.example
  wanlab pki issue cern --dir pki --role agent --ip 2001:db8:2::9 --ip 10.2.0.9
  wanlab pki issue ctl --dir pki --role controller`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			r, err := pki.ParseRole(role)
			if err != nil {
				return usagef("--role: %v", err)
			}
			if dir == "" {
				return usagef("give --dir, the CA's directory")
			}
			if days < 1 || days > 3650 {
				return usagef("--days %d: give 1 to 3650", days)
			}
			o := pki.Options{DNS: dns, NotAfter: time.Now().Add(time.Duration(days) * 24 * time.Hour)}
			for _, s := range ips {
				ip, err := sanIP(s)
				if err != nil {
					return err
				}
				o.IPs = append(o.IPs, ip)
			}
			if r == pki.Agent && len(dns) == 0 && len(ips) == 0 {
				return usagef("an agent's certificate needs the names controllers dial it by: give --ip or --dns")
			}
			if err := pki.Issue(dir, a[0], r, o); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%s %s: %s, %s (0600), valid %d days, identity cn:%s\n", r, a[0],
				filepath.Join(dir, a[0]+".crt"), filepath.Join(dir, a[0]+".key"), days, a[0])
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the CA's directory (wanlab pki init DIR)")
	c.Flags().StringVar(&role, "role", "", "agent or controller")
	c.Flags().StringSliceVar(&dns, "dns", nil, "a DNS name of the agent (repeat, or comma-separated)")
	c.Flags().StringSliceVar(&ips, "ip", nil, "an IP address of the agent, IPv4 or IPv6 (repeat, or comma-separated)")
	c.Flags().IntVar(&days, "days", 398, "days of validity")
	return c
}

// sanIP reads an agent's address for its certificate's IP SANs: IPv4, or
// IPv6 bare or in brackets (2001:db8::1, [2001:db8::1]); an IPv4 address
// written ::ffff:a.b.c.d is IPv4. A zone (fe80::1%eth0) names an
// interface of one host, which no certificate can hold.
func sanIP(s string) (net.IP, error) {
	a, err := ipArg(s)
	switch {
	case err != nil:
		return nil, usagef("--ip %q is not an IP address (IPv4, or IPv6 as 2001:db8::1)", s)
	case a.Zone() != "":
		return nil, usagef("--ip %q has a zone (%%%s): a certificate holds addresses without one; give a global or unique local IPv6 address", s, a.Zone())
	}
	return net.IP(a.AsSlice()), nil
}
