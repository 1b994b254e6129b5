package scenario

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/datadir"
)

// Command is a workload made of the user's own programs (a web server and
// curl, an xrootd, a GridFTP), run in emulated hosts as testbed exec runs
// them: the files are made first, then the server is started and waited
// for, then the clients run to their end; the server is stopped after.
type Command struct {
	Files   []CommandFile
	Server  *CommandRun
	Clients []CommandRun
	// Timeout bounds the clients' run; a client still running is stopped
	// and counted as timed out.
	Timeout time.Duration
}

// CommandRun is one program: its host and argv (no shell), with the
// placeholders {dir} (the host's data directory, also the program's
// working directory), {addr} (the host's address) and {addr:HOST}.
type CommandRun struct {
	Host string
	Run  []string
	// Ready is the port a server listens on once it is ready to serve.
	Ready int
}

// CommandFile is a file made in a host's data directory before the step:
// Size bytes of generated data, dropped from the page cache so that the
// first read comes from the (capped) disk, or Text with the placeholders
// filled in.
type CommandFile struct {
	Host, Name string
	Size       int64
	Text       string
}

type rawCommand struct {
	Files   []rawCommandFile `yaml:"files"`
	Server  *rawCommandRun   `yaml:"server"`
	Clients []rawCommandRun  `yaml:"clients"`
	Timeout string           `yaml:"timeout"`
}

type rawCommandRun struct {
	Host  string   `yaml:"host"`
	Run   []string `yaml:"run"`
	Ready *int     `yaml:"ready"`
}

type rawCommandFile struct {
	Host string `yaml:"host"`
	Name string `yaml:"name"`
	Size string `yaml:"size"`
	Text string `yaml:"text"`
}

// placeholder finds {dir}, {addr} and {addr:HOST}, and anything else in
// braces that looks like one.
var placeholder = regexp.MustCompile(`\{(dir|addr(?::[^{}\s]*)?)\}|\{[a-z_]+(?::[^{}\s]*)?\}`)

// ExpandPlaceholders fills in a string's placeholders for a program or file on host,
// given each host's data directory and address.
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

func (v *validator) command(field string, r rawCommand, tb *Testbed) *Command {
	if tb.RealHosts() {
		v.fail(field, "a command runs in an emulated host (testbed exec): on real hosts, run your programs yourself and watch them with wanlab watch")
		return nil
	}
	c := &Command{Timeout: v.duration(field+".timeout", r.Timeout, 10*time.Minute)}
	if c.Timeout <= 0 || c.Timeout > agentLimits.MaxDuration {
		v.fail(field+".timeout", "give a time up to %v", agentLimits.MaxDuration)
	}
	// checkText checks the placeholders of a program or file on host.
	checkText := func(f, host, s string) {
		for _, m := range placeholder.FindAllString(s, -1) {
			inner := m[1 : len(m)-1]
			switch {
			case inner == "dir", inner == "addr":
			case strings.HasPrefix(inner, "addr:"):
				peer := strings.TrimPrefix(inner, "addr:")
				v.host(f, peer, tb)
				v.reaches(f, host, peer, tb)
			default:
				v.fail(f, "unknown placeholder %s (there are {dir}, {addr} and {addr:HOST})", m)
			}
		}
	}
	run := func(f string, r rawCommandRun, server bool) CommandRun {
		v.host(f+".host", r.Host, tb)
		if len(r.Run) == 0 || r.Run[0] == "" {
			v.fail(f+".run", "give the program and its arguments, as [curl, -o, /dev/null, URL]")
		}
		for i, a := range r.Run {
			checkText(fmt.Sprintf("%s.run[%d]", f, i), r.Host, a)
		}
		cr := CommandRun{Host: r.Host, Run: r.Run}
		switch {
		case r.Ready != nil && !server:
			v.fail(f+".ready", "only the server waits for a port")
		case r.Ready != nil && (*r.Ready < 1 || *r.Ready > 65535):
			v.fail(f+".ready", "%d: give the port the server listens on (1-65535)", *r.Ready)
		case r.Ready != nil:
			cr.Ready = *r.Ready
		}
		return cr
	}
	if r.Server != nil {
		s := run(field+".server", *r.Server, true)
		c.Server = &s
	}
	if len(r.Clients) == 0 {
		v.fail(field+".clients", "give at least one client: [{host: h, run: [curl, ...]}]")
	}
	for i, cl := range r.Clients {
		f := fmt.Sprintf("%s.clients[%d]", field, i)
		c.Clients = append(c.Clients, run(f, cl, false))
		if r.Server != nil {
			v.reaches(f+".host", r.Server.Host, cl.Host, tb)
		}
	}
	seen := map[string]bool{}
	for i, rf := range r.Files {
		f := fmt.Sprintf("%s.files[%d]", field, i)
		v.host(f+".host", rf.Host, tb)
		if err := datadir.ValidName(rf.Name); err != nil {
			v.fail(f+".name", "%v", err)
		}
		if seen[rf.Host+"/"+rf.Name] {
			v.fail(f+".name", "%s is made twice on %s", rf.Name, rf.Host)
		}
		seen[rf.Host+"/"+rf.Name] = true
		cf := CommandFile{Host: rf.Host, Name: rf.Name, Text: rf.Text}
		switch {
		case (rf.Size == "") == (rf.Text == ""):
			v.fail(f, "give a size (generated data) or a text, one of them")
		case rf.Size != "":
			cf.Size = v.size(f+".size", rf.Size, 0)
			if cf.Size <= 0 {
				v.fail(f+".size", "must be positive")
			}
			v.limit(f+".size", agentLimits.Bytes("size", cf.Size))
		default:
			if len(rf.Text) > 1<<20 {
				v.fail(f+".text", "%d bytes: a text file is at most 1 MiB", len(rf.Text))
			}
			checkText(f+".text", rf.Host, rf.Text)
		}
		c.Files = append(c.Files, cf)
	}
	return c
}
