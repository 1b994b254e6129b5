// Package yamlfile reads the YAML files people write for wanlab
// (scenarios, agent policies, inventories) so that every problem comes back
// as file:line: field: what is wrong, in plain words, all at once. It
// decodes strictly (an unknown field is a problem), keeps the order of
// mappings, refuses a key given twice and aliases that expand without end.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error lists the problems found in one file.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one thing wrong in a file, at a place in it.
type Problem struct {
	Line  int
	Field string // dotted path such as links[0].forward.rate; "" if unknown
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d: ", e.File, p.Line)
		if p.Field != "" {
			b.WriteString(p.Field + ": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}

var (
	yamlLineRE   = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRE    = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	unmarshalRE  = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`(.*)` )?into (\\S+)$")
	alreadyDefRE = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
)

// FromYAML turns yaml.v3's messages into file:line problems in plain words.
func FromYAML(file string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	e := &Error{File: file}
	for _, m := range msgs {
		line, _, msg := Explain(m)
		e.Problems = append(e.Problems, Problem{Line: max(line, 1), Msg: msg})
	}
	return e
}

func goTypeWord(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.Contains(t, "int"):
		return "a whole number"
	case strings.Contains(t, "float"):
		return "a number"
	case strings.Contains(t, "bool"):
		return "true or false"
	case strings.Contains(t, "string"):
		return "a single value"
	}
	return "a mapping"
}

func yamlKindWord(tag string) string {
	switch tag {
	case "map":
		return "a mapping"
	case "seq":
		return "a list"
	case "str":
		return "text"
	}
	return "a " + tag
}

// positions maps the dotted path of every node to its line.
func positions(n *yaml.Node) map[string]int {
	pos := map[string]int{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		pos[path] = n.Line
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				key := n.Content[i].Value
				child := key
				if path != "" {
					child = path + "." + key
				}
				walk(n.Content[i+1], child)
				pos[child] = n.Content[i].Line
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
	walk(n, "")
	return pos
}

// Checker records the problems found while validating one file, each at
// the line of the field it concerns.
type Checker struct {
	File     string
	pos      map[string]int
	problems []Problem
}

// Decode reads data strictly into v and returns a Checker for the
// validation that follows; empty is the problem to report for a file with
// nothing in it. A returned error is an *Error.
func Decode(file string, data []byte, v any, empty string) (*Checker, *yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, FromYAML(file, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil, &Error{File: file, Problems: []Problem{{Line: 1, Msg: empty}}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && err != io.EOF {
		return nil, nil, FromYAML(file, err)
	}
	return &Checker{File: file, pos: positions(root.Content[0])}, root.Content[0], nil
}

// Fail records a problem at field (a dotted path such as links[0].rate);
// the line is the field's, or its nearest parent's when the field is
// absent from the file.
func (c *Checker) Fail(field, format string, args ...any) {
	line := 0
	for p := field; ; {
		if l, ok := c.pos[p]; ok {
			line = l
			break
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			line = c.pos[""]
			break
		}
		p = p[:i]
	}
	p := Problem{Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	for _, q := range c.problems {
		if q == p {
			return
		}
	}
	c.problems = append(c.problems, p)
}

// At says field is at line, for fields whose place the decoding moved
// (settings merged from elsewhere in the file).
func (c *Checker) At(field string, line int) { c.pos[field] = line }

// Line is the line of field, 0 if it is not in the file.
func (c *Checker) Line(field string) int { return c.pos[field] }

// Count is how many problems are recorded.
func (c *Checker) Count() int { return len(c.problems) }

// Err is an *Error of the problems recorded, or nil.
func (c *Checker) Err() error {
	if len(c.problems) == 0 {
		return nil
	}
	return &Error{File: c.File, Problems: c.problems}
}

// Explain reads one of yaml.v3's decoding messages: its line (0 if none),
// the unknown field it names (if that is the problem), and the problem in
// plain words.
func Explain(m string) (line int, unknown, msg string) {
	msg = strings.TrimPrefix(m, "yaml: ")
	if sm := yamlLineRE.FindStringSubmatch(msg); sm != nil {
		line, _ = strconv.Atoi(sm[1])
		msg = sm[2]
	}
	switch {
	case unknownRE.MatchString(msg):
		unknown = unknownRE.FindStringSubmatch(msg)[1]
		msg = fmt.Sprintf("unknown field %q", unknown)
	case unmarshalRE.MatchString(msg):
		sm := unmarshalRE.FindStringSubmatch(msg)
		what := yamlKindWord(sm[1])
		if sm[2] != "" {
			what = fmt.Sprintf("%q is %s", sm[2], what)
		}
		msg = fmt.Sprintf("found %s where %s is expected", what, goTypeWord(sm[3]))
	case alreadyDefRE.MatchString(msg):
		sm := alreadyDefRE.FindStringSubmatch(msg)
		msg = fmt.Sprintf("duplicate name %q (first defined at line %s)", sm[1], sm[2])
	}
	return line, unknown, msg
}

// Ordered decodes a YAML mapping keeping the order of its keys, and
// refuses a key given twice.
type Ordered[V any] []Keyed[V]

// Keyed is one entry of an Ordered mapping.
type Keyed[V any] struct {
	Key   string
	Value V
}

// UnmarshalYAML decodes each value strictly, collecting every problem.
func (m *Ordered[V]) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: expected a mapping from names to settings (e.g. a: {cpus: 1}), not a list or a value", n.Line)}}
	}
	seen := map[string]int{}
	var problems []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if first, ok := seen[key.Value]; ok {
			problems = append(problems, fmt.Sprintf("line %d: mapping key %q already defined at line %d", key.Line, key.Value, first))
			continue
		}
		seen[key.Value] = key.Line
		var v V
		if n.Content[i+1].Kind != 0 && !(n.Content[i+1].Kind == yaml.ScalarNode && n.Content[i+1].Tag == "!!null") {
			if err := DecodeStrict(n.Content[i+1], &v); err != nil {
				var te *yaml.TypeError
				if !errors.As(err, &te) {
					return err
				}
				problems = append(problems, te.Errors...)
			}
		}
		*m = append(*m, Keyed[V]{key.Value, v})
	}
	if problems != nil {
		return &yaml.TypeError{Errors: problems}
	}
	return nil
}

// DecodeStrict decodes a node rejecting unknown fields; yaml.v3's Node.Decode
// does not carry the outer decoder's KnownFields setting.
func DecodeStrict(n *yaml.Node, v any) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	resolved, err := ResolveAliases(n)
	if err != nil {
		return &yaml.TypeError{Errors: []string{err.Error()}}
	}
	if err := enc.Encode(resolved); err != nil {
		return err
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	err = dec.Decode(v)
	var te *yaml.TypeError
	if errors.As(err, &te) {
		// Re-encoding renumbers lines from 1; shift them back.
		for i, msg := range te.Errors {
			te.Errors[i] = shiftLine(msg, n.Line-1)
		}
	}
	return err
}

// ResolveAliases copies a node with every alias (*name) replaced by what it
// names, so that a fragment re-encoded on its own does not refer to an
// anchor defined elsewhere in the file. A file whose aliases would expand
// past maxExpandedNodes (a "billion laughs") is refused.
func ResolveAliases(n *yaml.Node) (*yaml.Node, error) {
	budget := maxExpandedNodes
	out := resolveWithin(n, &budget)
	if budget < 0 {
		return nil, fmt.Errorf("line %d: aliases expand to more than %d values", n.Line, maxExpandedNodes)
	}
	return out, nil
}

const maxExpandedNodes = 100000

func resolveWithin(n *yaml.Node, budget *int) *yaml.Node {
	if *budget--; n == nil || *budget < 0 {
		return n
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return resolveWithin(n.Alias, budget)
	}
	out := *n
	out.Anchor = ""
	if len(n.Content) > 0 {
		out.Content = make([]*yaml.Node, len(n.Content))
		for i, c := range n.Content {
			out.Content[i] = resolveWithin(c, budget)
		}
	}
	return &out
}

var lineRE = regexp.MustCompile(`line (\d+)`)

func shiftLine(msg string, by int) string {
	return lineRE.ReplaceAllStringFunc(msg, func(s string) string {
		n, _ := strconv.Atoi(s[len("line "):])
		return "line " + strconv.Itoa(n+by)
	})
}
