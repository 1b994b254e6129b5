package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/yamlfile"
)

// rawFile is the YAML as written; quantities stay strings until validation so
// that every error can name its field.
type rawFile struct {
	Name    string                      `yaml:"name"`
	Subnet  string                      `yaml:"subnet"`
	Subnet6 string                      `yaml:"subnet6"`
	Family  string                      `yaml:"family"`
	Seed    *uint64                     `yaml:"seed"`
	Hosts   yamlfile.Ordered[rawHost]   `yaml:"hosts"`
	Sites   yamlfile.Ordered[rawSite]   `yaml:"sites"`
	Links   []rawLink                   `yaml:"links"`
	Routers yamlfile.Ordered[rawRouter] `yaml:"routers"`
	Routing string                      `yaml:"routing"`
	Routes  []rawRoute                  `yaml:"routes"`
	Reroute string                      `yaml:"reroute"`
	Engine  *rawEngine                  `yaml:"engine"`
	Machine *rawMachine                 `yaml:"machine"`
	TLS     *pki.Files                  `yaml:"tls"`
	Backend string                      `yaml:"backend"`
	// Events are read by ParseFile, with the workloads.
	Events yaml.Node `yaml:"events"`
	// Workloads are read by ParseFile; the test-bed does not need them.
	Workloads yaml.Node `yaml:"workloads"`
}

type rawEngine struct {
	Realtime      *bool  `yaml:"realtime"`
	Spin          string `yaml:"spin"`
	KeepCPUsAwake *bool  `yaml:"keep_cpus_awake"`
	Offloads      *bool  `yaml:"offloads"`
	Coalesce      string `yaml:"coalesce"`
	Threads       *int   `yaml:"threads"`
}

type rawMachine struct {
	Sysctl  map[string]string `yaml:"sysctl"`
	Modules []string          `yaml:"modules"`
}

type rawHost struct {
	CPUs   *float64          `yaml:"cpus"`
	Site   string            `yaml:"site"`
	Sysctl map[string]string `yaml:"sysctl"`
	Disk   *rawDisk          `yaml:"disk"`
	Agent  string            `yaml:"agent"`
}

type rawDisk struct {
	Read  string `yaml:"read"`
	Write string `yaml:"write"`
}

type rawParams struct {
	Rate    string  `yaml:"rate"`
	Delay   string  `yaml:"delay"`
	Jitter  string  `yaml:"jitter"`
	Loss    rawLoss `yaml:"loss"`
	Queue   string  `yaml:"queue"`
	MTU     *int    `yaml:"mtu"`
	Reorder *bool   `yaml:"reorder"`
	// Down is only a setting (testbed set, events): in a site "down" is
	// its down direction.
	Down      *bool    `yaml:"-"`
	Blackhole *bool    `yaml:"blackhole"`
	Hops      []string `yaml:"hops"`
	hopsSet   bool
	Cross     *rawCross `yaml:"cross"`
	crossOff  bool
	Trace     *rawTrace `yaml:"trace"`
}

// rawLoss is either a percentage ("0.1%") or a Gilbert-Elliott mapping.
type rawLoss struct {
	Random  string
	Gilbert map[string]string
	set     bool
}

var gilbertKeys = map[string]bool{"model": true, "p": true, "r": true, "bad_loss": true, "good_loss": true}

func (l *rawLoss) UnmarshalYAML(n *yaml.Node) error {
	l.set = true
	switch n.Kind {
	case yaml.ScalarNode:
		l.Random = n.Value
		return nil
	case yaml.MappingNode:
		l.Gilbert = map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if !gilbertKeys[k.Value] {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: field %s not found in type loss", k.Line, k.Value)}}
			}
			if v.Kind != yaml.ScalarNode {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: loss.%s must be a single value", v.Line, k.Value)}}
			}
			l.Gilbert[k.Value] = v.Value
		}
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: loss must be a percentage or a gilbert-elliott mapping", n.Line)}}
}

type rawCross struct {
	Rate      string   `yaml:"rate"`
	Pattern   string   `yaml:"pattern"`
	Size      string   `yaml:"size"`
	On        string   `yaml:"on"`
	Off       string   `yaml:"off"`
	FlowMean  string   `yaml:"flow_mean"`
	FlowShape *float64 `yaml:"flow_shape"`
	FlowRate  string   `yaml:"flow_rate"`
}

type rawLink struct {
	Between   []string `yaml:"between"`
	rawParams `yaml:",inline"`
	Forward   *rawParams `yaml:"forward"`
	Reverse   *rawParams `yaml:"reverse"`
}

type rawSite struct {
	rawParams `yaml:",inline"`
	Via       string     `yaml:"via"`
	Up        *rawParams `yaml:"up"`
	Down      *rawParams `yaml:"down"`
	LAN       *rawParams `yaml:"lan"`
}

// rawRouter is a router's settings.
type rawRouter struct {
	Addr string `yaml:"addr"`
}

// rawRoute is an explicit route of one ordered pair of hosts.
type rawRoute struct {
	From string   `yaml:"from"`
	To   string   `yaml:"to"`
	Via  []string `yaml:"via"`
}

// Error lists the problems found in a scenario file.
type Error = yamlfile.Error

// Problem is one thing wrong in a scenario, at a place in the file.
type Problem = yamlfile.Problem

// Load reads and validates the scenario file at path: its test-bed and,
// with the quick: settings applied when quick is set, every step of every
// workload. A returned error is an *Error listing every problem found, or
// says why the file could not be read.
func Load(path string, quick bool) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	return Parse(path, data, quick)
}

// Parse reads and validates a scenario: its test-bed and every step of
// every workload (with the quick: settings applied when quick is set), so
// that a run never starts with an impossible step in it. file names the
// source in errors. A returned error is an *Error listing every problem found.
func Parse(file string, data []byte, quick bool) (*File, error) {
	return parse(file, data, quick, false)
}

// ParseStored reads a scenario as a run stored it: as Parse, but the files
// it names (traces) are not read, since they may be gone or changed.
func ParseStored(file string, data []byte, quick bool) (*File, error) {
	return parse(file, data, quick, true)
}

func parse(file string, data []byte, quick, stored bool) (*File, error) {
	var raw rawFile
	c, root, err := yamlfile.Read(file, data, &raw, "the file is empty: a scenario needs at least name and hosts")
	if err != nil {
		return nil, err
	}
	v := newValidator(c, filepath.Dir(file), stored)
	tb := v.testbed(&raw)
	f := &File{Testbed: tb, Quick: quick}
	// The timelines and workloads name the hosts and links: without hosts
	// every name would be unknown, which says nothing more.
	if len(tb.Hosts) > 0 && !v.pastBounds {
		f.Events = v.events("events", &raw.Events, tb, 0, tb.Seed)
		v.workloads(f, root)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// validator reads and checks a whole scenario file, every problem at its
// line: it is its concerns' checkers put together, all recording into one
// fieldChecker. It makes each workload's steps itself (workload.go), with
// the kinds' decoders (kinds.go).
type validator struct {
	*fieldChecker
	*hostChecker
	*bedChecker
	*timelineChecker
	*planner
}

// newValidator is a validator recording into c, reading the files a
// scenario names relative to dir, or (stored) not reading them.
func newValidator(c *yamlfile.Checker, dir string, stored bool) *validator {
	fields := &fieldChecker{Checker: c}
	hosts := &hostChecker{fieldChecker: fields}
	return &validator{
		fieldChecker:    fields,
		hostChecker:     hosts,
		bedChecker:      &bedChecker{dirChecker: &dirChecker{fieldChecker: fields, dir: dir, stored: stored}},
		timelineChecker: &timelineChecker{fieldChecker: fields, hosts: hosts},
		planner:         &planner{fieldChecker: fields},
	}
}

// ChangeKeys are the settings Change takes.
var ChangeKeys = []string{"rate", "delay", "jitter", "loss", "queue", "reorder", "mtu", "down", "blackhole", "hops", "cross", "cross_pattern"}

// isZero says whether a rate is written as zero ("0", "0Mbit").
func isZero(rate string) bool {
	r, err := units.ParseRate(rate)
	return err == nil && r == 0 || strings.Trim(rate, "0.") == ""
}

// Change applies settings written key=value (rate, delay, jitter, loss,
// queue, reorder, mtu, down, blackhole, hops=ADDR,ADDR|none: as in a
// scenario's link) over a direction's, with the
// same validation as a scenario file; a change of rate or delay without a
// queue keeps the queue in force.
func Change(d Direction, settings []string) (Direction, error) {
	var raw rawParams
	for _, s := range settings {
		key, value, ok := strings.Cut(s, "=")
		if !ok || value == "" {
			return d, fmt.Errorf("%q: write settings as key=value (rate=10Mbit delay=20ms jitter=1ms loss=0.5%% queue=100 mtu=1400 down=true)", s)
		}
		if key == "rate" && isZero(value) {
			return d, fmt.Errorf("rate=%s: a rate of zero carries nothing; to cut the link use down=true", value)
		}
		switch key {
		case "rate":
			raw.Rate = value
		case "delay":
			raw.Delay = value
		case "jitter":
			raw.Jitter = value
		case "loss":
			raw.Loss = rawLoss{Random: value, set: true}
		case "queue":
			raw.Queue = value
		case "reorder", "down", "blackhole":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return d, fmt.Errorf("%s=%s: give true or false", key, value)
			}
			switch key {
			case "reorder":
				raw.Reorder = &b
			case "down":
				raw.Down = &b
			default:
				raw.Blackhole = &b
			}
		case "mtu":
			m, err := strconv.Atoi(value)
			if err != nil {
				return d, fmt.Errorf("mtu=%s: give the MTU in bytes, as mtu=1400", value)
			}
			raw.MTU = &m
		case "cross":
			if value == "none" {
				raw.crossOff = true
				continue
			}
			if raw.Cross == nil {
				raw.Cross = &rawCross{}
			}
			raw.Cross.Rate = value
		case "cross_pattern":
			if raw.Cross == nil {
				raw.Cross = &rawCross{}
			}
			raw.Cross.Pattern = value
		case "hops":
			raw.hopsSet = true
			if value != "none" {
				raw.Hops = strings.Split(value, ",")
			}
		default:
			return d, fmt.Errorf("%q: no setting %q (%s)", s, key, strings.Join(ChangeKeys, ", "))
		}
	}
	v := &dirChecker{fieldChecker: &fieldChecker{Checker: &yamlfile.Checker{File: "settings"}}}
	out := v.params("", raw, d, true)
	if err := v.Err(); err != nil {
		var msgs []string
		for _, p := range err.(*yamlfile.Error).Problems {
			msgs = append(msgs, strings.TrimPrefix(p.Field, ".")+": "+p.Msg)
		}
		return d, errors.New(strings.Join(msgs, "; "))
	}
	return out, nil
}
