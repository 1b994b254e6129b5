// Package command is the workload kind made of the user's own programs (a
// web server and curl, an xrootd, a GridFTP), run in emulated hosts as
// testbed exec runs them: the files are made first, then the server is
// started and waited for, then the clients run to their end; the server
// is stopped after. It is one unit: its settings and their checks, and its
// driver, registered as Kind.
package command

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// Kind is the command workload.
var Kind = kind.Kind{Name: results.Command, Decode: decode, Run: kind.RunWith("a command step", run), Traits: traits}

// Spec is one step of a command workload.
type Spec struct {
	Files   []File
	Server  *Program
	Clients []Program
	// Timeout bounds the clients' run; a client still running is stopped
	// and counted as timed out.
	Timeout time.Duration
}

// Program is one program: its host and argv (no shell), with the
// placeholders {dir} (the host's data directory, also the program's
// working directory), {addr} (the host's address) and {addr:HOST}.
type Program struct {
	Host string
	Run  []string
	// Ready is the port a server listens on once it is ready to serve.
	Ready int
}

// File is a file made in a host's data directory before the step: Size
// bytes of generated data, dropped from the page cache so that the first
// read comes from the (capped) disk, or Text with the placeholders filled
// in.
type File struct {
	Host, Name string
	Size       int64
	Text       string
}

// Length is 0: a command step ends when its clients do.
func (s *Spec) Length() time.Duration { return 0 }

// RoleHosts are the server's host and the clients'.
func (s *Spec) RoleHosts() map[string][]string {
	roles := map[string][]string{}
	if s.Server != nil {
		roles["server"] = []string{s.Server.Host}
	}
	for _, c := range s.Clients {
		roles["client"] = append(roles["client"], c.Host)
	}
	return roles
}

// Raw is a command step's settings as written.
type Raw struct {
	Files   []RawFile    `yaml:"files"`
	Server  *RawProgram  `yaml:"server"`
	Clients []RawProgram `yaml:"clients"`
	Timeout string       `yaml:"timeout"`
}

// RawProgram is a program as written.
type RawProgram struct {
	Host  string   `yaml:"host"`
	Run   []string `yaml:"run"`
	Ready *int     `yaml:"ready"`
}

// RawFile is a file as written.
type RawFile struct {
	Host string `yaml:"host"`
	Name string `yaml:"name"`
	Size string `yaml:"size"`
	Text string `yaml:"text"`
}

// placeholder finds {dir}, {addr} and {addr:HOST}, and anything else in
// braces that looks like one.
var placeholder = regexp.MustCompile(`\{(dir|addr(?::[^{}\s]*)?)\}|\{[a-z_]+(?::[^{}\s]*)?\}`)

// ExpandPlaceholders fills in a string's placeholders for a program or
// file on host, given each host's data directory and address.
func ExpandPlaceholders(s, host string, dir, addr func(host string) string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		switch inner := m[1 : len(m)-1]; {
		case inner == "dir":
			return dir(host)
		case inner == "addr":
			return addr(host)
		case strings.HasPrefix(inner, "addr:"):
			return addr(strings.TrimPrefix(inner, "addr:"))
		}
		return m
	})
}

func decode(d kind.Decoder, c kind.Check) kind.Spec {
	var r Raw
	if !d(&r) {
		return nil
	}
	if s := Check(c, r); s != nil {
		return s
	}
	return nil
}

// maxText bounds a text file's length.
const maxText = 1 << 20

// Check checks a command step's settings, reporting every problem to c;
// nil when a command cannot run on the test-bed at all.
func Check(c kind.Check, r Raw) *Spec {
	if c.RealHosts() {
		c.Fail("", "a command runs in an emulated host (testbed exec): on real hosts, run your programs yourself and watch them with wanlab watch")
		return nil
	}
	lim := c.Limits()
	s := &Spec{Timeout: c.Duration("timeout", r.Timeout, 10*time.Minute)}
	if s.Timeout <= 0 || s.Timeout > lim.MaxDuration {
		c.Fail("timeout", "give a time up to %v", lim.MaxDuration)
	}
	if r.Server != nil {
		p := checkProgram(c, "server", *r.Server, true)
		s.Server = &p
	}
	if len(r.Clients) == 0 {
		c.Fail("clients", "give at least one client: [{host: h, run: [curl, ...]}]")
	}
	for i, cl := range r.Clients {
		f := fmt.Sprintf("clients[%d]", i)
		s.Clients = append(s.Clients, checkProgram(c, f, cl, false))
		if r.Server != nil {
			c.Reaches(f+".host", r.Server.Host, cl.Host)
		}
	}
	seen := map[string]bool{}
	for i, rf := range r.Files {
		f := fmt.Sprintf("files[%d]", i)
		c.Host(f+".host", rf.Host)
		if err := datadir.ValidName(rf.Name); err != nil {
			c.Fail(f+".name", "%v", err)
		}
		if seen[rf.Host+"/"+rf.Name] {
			c.Fail(f+".name", "%s is made twice on %s", rf.Name, rf.Host)
		}
		seen[rf.Host+"/"+rf.Name] = true
		cf := File{Host: rf.Host, Name: rf.Name, Text: rf.Text}
		switch {
		case (rf.Size == "") == (rf.Text == ""):
			c.Fail(f, "give a size (generated data) or a text, one of them")
		case rf.Size != "":
			cf.Size = c.Size(f+".size", rf.Size, 0)
			if cf.Size <= 0 {
				c.Fail(f+".size", "must be positive")
			}
			c.Limit(f+".size", lim.Bytes("size", cf.Size))
		default:
			if len(rf.Text) > maxText {
				c.Fail(f+".text", "%d bytes: a text file is at most 1 MiB", len(rf.Text))
			}
			checkText(c, f+".text", rf.Host, rf.Text)
		}
		s.Files = append(s.Files, cf)
	}
	return s
}

// checkProgram checks one program (the server, or a client) at field.
func checkProgram(c kind.Check, field string, r RawProgram, server bool) Program {
	c.Host(field+".host", r.Host)
	if len(r.Run) == 0 || r.Run[0] == "" {
		c.Fail(field+".run", "give the program and its arguments, as [curl, -o, /dev/null, URL]")
	}
	for i, a := range r.Run {
		checkText(c, fmt.Sprintf("%s.run[%d]", field, i), r.Host, a)
	}
	p := Program{Host: r.Host, Run: r.Run}
	switch {
	case r.Ready != nil && !server:
		c.Fail(field+".ready", "only the server waits for a port")
	case r.Ready != nil && (*r.Ready < 1 || *r.Ready > 65535):
		c.Fail(field+".ready", "%d: give the port the server listens on (1-65535)", *r.Ready)
	case r.Ready != nil:
		p.Ready = *r.Ready
	}
	return p
}

// checkText checks the placeholders of a program or file on host.
func checkText(c kind.Check, field, host, s string) {
	for _, m := range placeholder.FindAllString(s, -1) {
		inner := m[1 : len(m)-1]
		switch {
		case inner == "dir", inner == "addr":
		case strings.HasPrefix(inner, "addr:"):
			peer := strings.TrimPrefix(inner, "addr:")
			c.Host(field, peer)
			c.Reaches(field, host, peer)
		default:
			c.Fail(field, "unknown placeholder %s (there are {dir}, {addr} and {addr:HOST})", m)
		}
	}
}
