package eventdb

// A step of several servers (servers: [a, b, c]): which server each
// client reads from, and the checks of the step's hosts. Client i reads
// from servers[i mod len(servers)], so a file sets which clients read
// from which server by the order of its clients.

import (
	"fmt"

	"github.com/wanlab/wanlab/internal/workload/kind"
)

// missingClients says how to list a step's clients.
const missingClients = "list the client hosts, such as [client1, client2]"

// checkHosts checks the step's hosts: one server (server:) or several
// (servers:), exactly one of the two; each server a known host, listed
// once; at least one client and no more servers than clients; each client
// a known host, not a server, that its server reaches. A step of one
// server: is checked as every hub of a kind is (kind.Hub).
func checkHosts(c kind.Check, r Raw) {
	switch {
	case r.Servers == nil && r.Server != "":
		kind.Hub(c, "server", r.Server, "clients", r.Clients, missingClients)
		return
	case r.Servers == nil:
		c.Fail("server", "missing: name the server's host (server: HOST), or several servers (servers: [HOST, ...])")
	case r.Server != "":
		c.Fail("servers", "give one server (server: %s) or several (servers: [...]), not both", r.Server)
	case len(r.Servers) == 0:
		c.Fail("servers", "an empty list: name the servers' hosts, such as [server1, server2], or give one server: HOST")
	}
	first := map[string]int{} // each server's place in servers
	for k, h := range r.Servers {
		f := fmt.Sprintf("servers[%d]", k)
		c.Host(f, h)
		if j, dup := first[h]; dup && h != "" {
			c.Fail(f, "%q is servers[%d] already: list each server once", h, j)
			continue
		}
		first[h] = k
	}
	n := len(r.Servers)
	switch {
	case len(r.Clients) == 0:
		c.Fail("clients", "missing: %s", missingClients)
	case n > len(r.Clients):
		c.Fail("servers", "more servers (%d) than clients (%d): client i reads from servers[i mod %d], so servers[%d] on would serve none (list more clients, or fewer servers)",
			n, len(r.Clients), n, len(r.Clients))
	}
	for i, h := range r.Clients {
		f := fmt.Sprintf("clients[%d]", i)
		c.Host(f, h)
		if k, ok := first[h]; ok && h != "" {
			c.Fail(f, "%q is a server (servers[%d]): a host is a server or a client of the step, not both", h, k)
		}
		if n > 0 {
			c.Reaches(f, r.Servers[i%n], h)
		}
	}
}

// servers are the hosts of the step's servers: its Servers, or its one
// Server.
func (e *Spec) servers() []string {
	if len(e.Servers) > 0 {
		return e.Servers
	}
	return []string{e.Server}
}

// serverOf is the host of the server that client i (in the order of the
// step's clients) reads from: servers[i mod len(servers)].
func (e *Spec) serverOf(i int) string {
	s := e.servers()
	return s[i%len(s)]
}

// clientsOf is how many clients read from the k-th server (serverOf).
func (e *Spec) clientsOf(k int) int {
	n := len(e.servers())
	return max(0, (len(e.Clients)-k+n-1)/n)
}

// subject is what a job that read from server records as its subject
// (job.Record.Subject): the server's host when the step has several,
// "" when it has one (the step's server, as before).
func (e *Spec) subject(server string) string {
	if len(e.servers()) > 1 {
		return server
	}
	return ""
}

// serverActors are the names of the model's actors of server host: the one
// that serves its pages and the one that accepts its sessions. A step of
// one server names them as it always has.
func (e *Spec) serverActors(env kind.ModelEnv, host string) (pages, accept string) {
	if len(e.servers()) == 1 {
		return env.Name("eventdb.server"), env.Name("eventdb.accept")
	}
	return env.Name("eventdb.server." + host), env.Name("eventdb.accept." + host)
}
