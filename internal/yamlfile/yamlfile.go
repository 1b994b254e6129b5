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
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Error lists the problems found in one file.
type Error struct {
	File     string
	Problems []Problem
	// More counts the problems found past MaxProblems, which are not listed.
	More int
}

// Problem is one thing wrong in a file, at a place in it.
type Problem struct {
	Line  int
	Field string // dotted path such as links[0].forward.rate; "" if unknown
	Msg   string
	// Err is the kind of problem, when it has one callers tell apart
	// (ErrUnknownField, ErrTooLarge); nil otherwise.
	Err error
}

// The kinds of problem a caller may tell apart with errors.Is on an *Error.
var (
	// ErrUnknownField is a key that the file's format does not have.
	ErrUnknownField = errors.New("unknown field")
	// ErrTooLarge is a file over a bound on what it may expand to (its
	// size, its aliases, the plan it describes): it is refused before it
	// is expanded.
	ErrTooLarge = errors.New("over a bound of the file's size")
)

// MaxProblems bounds the problems an *Error lists; the rest are counted.
const MaxProblems = 500

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
	if e.More > 0 {
		fmt.Fprintf(&b, "\n%s: and %d more problems", e.File, e.More)
	}
	return b.String()
}

// Unwrap is the kinds of the problems (ErrUnknownField, ErrTooLarge), for
// errors.Is.
func (e *Error) Unwrap() []error {
	var out []error
	for _, p := range e.Problems {
		if p.Err != nil && !slices.Contains(out, p.Err) {
			out = append(out, p.Err)
		}
	}
	return out
}

var (
	yamlLineRE   = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRE    = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	unmarshalRE  = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`(.*)` )?into (\\S+)$")
	alreadyDefRE = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
)

// FromYAML turns yaml.v3's messages into file:line problems in plain words.
func FromYAML(file string, err error) error {
	e := &Error{File: file, Problems: fromYAML(err)}
	for i := range e.Problems {
		e.Problems[i].Line = max(e.Problems[i].Line, 1)
	}
	return e
}

// fromYAML reads yaml.v3's messages as problems (line 0 where none is said).
func fromYAML(err error) []Problem {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var out []Problem
	for _, m := range msgs {
		line, unknown, msg := Explain(m)
		p := Problem{Line: line, Msg: msg}
		if unknown != "" {
			p.Err = ErrUnknownField
		}
		out = append(out, p)
	}
	return out
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

// positions maps the dotted path of every node under n (at path) to its
// line: a mapping's entries to their key's.
func positions(pos map[string]int, n *yaml.Node, path string) {
	pos[path] = n.Line
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			child := join(path, n.Content[i].Value)
			positions(pos, n.Content[i+1], child)
			pos[child] = n.Content[i].Line
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			positions(pos, c, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// join is the dotted path of key under path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Checker records the problems found while validating one file, each at
// the line of the field it concerns.
type Checker struct {
	File     string
	pos      map[string]int
	problems []Problem
	seen     map[Problem]bool
	more     int
	// failed are the fields that did not decode: what validation says of
	// them (a missing value, a zero) would only repeat it.
	failed map[string]bool
}

// Limits on what a file may hold, counted before anything is expanded.
const (
	// MaxFileSize bounds the bytes of a file.
	MaxFileSize = 1 << 20
	// MaxValues bounds the values (scalars, lists, mappings) of a file
	// with its aliases expanded: a "billion laughs" of aliases of
	// aliases is refused before it is decoded.
	MaxValues = 1_000_000
)

// Read reads data strictly into v and returns a Checker for the
// validation that follows, with the problems of decoding (unknown fields,
// values of the wrong type, keys given twice) already in it, each with its
// field, so that validation goes on and every problem is reported at once;
// what did not decode is left zero. empty is the problem to report for a
// file with nothing in it. The returned error, an *Error, is for a file
// that cannot be read at all: not UTF-8, not YAML, empty, more than one
// document, or over MaxFileSize or MaxValues (ErrTooLarge).
func Read(file string, data []byte, v any, empty string) (*Checker, *yaml.Node, error) {
	fatal := func(line int, err error, format string, args ...any) (*Checker, *yaml.Node, error) {
		return nil, nil, &Error{File: file, Problems: []Problem{{Line: line, Msg: fmt.Sprintf(format, args...), Err: err}}}
	}
	if len(data) > MaxFileSize {
		return fatal(1, ErrTooLarge, "the file has %d bytes: a file holds at most %d (%d MiB)", len(data), MaxFileSize, MaxFileSize>>20)
	}
	if line, col, b, ok := firstNonUTF8(data); ok {
		return fatal(line, nil, "byte 0x%02x at column %d is not UTF-8 text: save the file as UTF-8", b, col)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil && err != io.EOF {
		return nil, nil, FromYAML(file, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return fatal(1, nil, "%s", empty)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		return nil, nil, FromYAML(file, err)
	case len(next.Content) > 0 && !isNull(next.Content[0]):
		return fatal(next.Line, nil, "a second YAML document starts here (after ---): the file is one document")
	}
	top := root.Content[0]
	if n := countValues(top, MaxValues, map[*yaml.Node]int{}); n > MaxValues {
		return fatal(overflowLine(top, MaxValues, map[*yaml.Node]int{}), ErrTooLarge,
			"aliases expand the file to more than %d values: write the repeated parts out, or repeat them less", MaxValues)
	}
	c := &Checker{File: file}
	positions(c.pos0(), top, "")
	for _, p := range DecodeNode(top, v) {
		if errors.Is(p.Err, ErrUnknownField) {
			p.Field = "" // the message names it
		}
		c.fromDecode(p)
	}
	return c, top, nil
}

// Decode is Read for callers that validate nothing of a file whose
// values did not all decode: any problem of decoding is returned, as an
// *Error, with every other.
func Decode(file string, data []byte, v any, empty string) (*Checker, *yaml.Node, error) {
	c, top, err := Read(file, data, v, empty)
	if err != nil {
		return nil, nil, err
	}
	if err := c.Err(); err != nil {
		return nil, nil, err
	}
	return c, top, nil
}

// Decoded records the problems DecodeNode found in the value at field
// (their fields are under it) and returns what ends their hold: until it
// is called, what validation finds wrong with a field that did not decode
// is left out, the decoding's problem having said it.
func (c *Checker) Decoded(field string, problems []Problem) (release func()) {
	var marked []string
	for _, p := range problems {
		switch {
		case p.Field == "":
			p.Field = field
		case strings.HasPrefix(p.Field, "["):
			p.Field = field + p.Field
		default:
			p.Field = join(field, p.Field)
		}
		if p.Err == nil && !c.failed[p.Field] {
			marked = append(marked, p.Field)
		}
		c.fromDecode(p)
	}
	return func() {
		for _, f := range marked {
			delete(c.failed, f)
		}
	}
}

// fromDecode records a problem of decoding and marks its field failed.
func (c *Checker) fromDecode(p Problem) {
	if p.Field != "" && p.Err == nil {
		if c.failed == nil {
			c.failed = map[string]bool{}
		}
		c.failed[p.Field] = true
	}
	c.add(p)
}

func (c *Checker) pos0() map[string]int {
	if c.pos == nil {
		c.pos = map[string]int{}
	}
	return c.pos
}

// firstNonUTF8 finds the first byte of data that is not UTF-8: its line,
// column (both from 1) and value.
func firstNonUTF8(data []byte) (line, col int, b byte, ok bool) {
	if utf8.Valid(data) {
		return 0, 0, 0, false
	}
	line, start := 1, 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return line, utf8.RuneCount(data[start:i]) + 1, data[i], true
		}
		if r == '\n' {
			line, start = line+1, i+1
		}
		i += size
	}
	return 0, 0, 0, false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// CountValues is how many values n holds with its aliases expanded, counted
// without expanding them; it stops counting past limit.
func CountValues(n *yaml.Node, limit int) int {
	return countValues(n, limit, map[*yaml.Node]int{})
}

// countValues counts n's values with aliases expanded, each node's count
// kept in memo so that shared anchors are counted once; counts saturate
// just past limit.
func countValues(n *yaml.Node, limit int, memo map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	if c, ok := memo[n]; ok {
		return c
	}
	memo[n] = limit + 1 // an alias of itself (which yaml.v3 refuses) counts as too many
	c := 1
	if n.Kind == yaml.AliasNode {
		c = countValues(n.Alias, limit, memo)
	} else {
		for _, ch := range n.Content {
			if c += countValues(ch, limit, memo); c > limit {
				c = limit + 1
				break
			}
		}
	}
	memo[n] = c
	return c
}

// overflowLine is the line where n's values pass limit: the alias whose
// expansion does, or the value that brings the count over.
func overflowLine(n *yaml.Node, limit int, memo map[*yaml.Node]int) int {
	budget := limit - 1
	for _, ch := range n.Content {
		c := countValues(ch, limit, memo)
		if c > budget {
			if ch.Kind == yaml.AliasNode || len(ch.Content) == 0 {
				return ch.Line
			}
			return overflowLine(ch, budget, memo)
		}
		budget -= c
	}
	return n.Line
}

// Fail records a problem at field (a dotted path such as links[0].rate);
// the line is the field's, or its nearest parent's when the field is
// absent from the file. A field that did not decode (or is under one that
// did not) has its problem reported already.
func (c *Checker) Fail(field, format string, args ...any) {
	c.FailErr(field, nil, format, args...)
}

// FailErr is Fail for a problem of a kind callers tell apart (such as
// ErrTooLarge).
func (c *Checker) FailErr(field string, kind error, format string, args ...any) {
	for p := field; p != ""; {
		if c.failed[p] {
			return
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	c.add(Problem{Line: c.lineOf(field), Field: field, Msg: fmt.Sprintf(format, args...), Err: kind})
}

// lineOf is the line of field, or of its nearest parent in the file.
func (c *Checker) lineOf(field string) int {
	for p := field; ; {
		if l, ok := c.pos[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return c.pos[""]
		}
		p = p[:i]
	}
}

// add records p once; past MaxProblems it is only counted.
func (c *Checker) add(p Problem) {
	if c.seen[p] {
		return
	}
	if c.seen == nil {
		c.seen = map[Problem]bool{}
	}
	c.seen[p] = true
	if len(c.problems) >= MaxProblems {
		c.more++
		return
	}
	c.problems = append(c.problems, p)
}

// At says field is at line, for fields whose place the decoding moved
// (settings merged from elsewhere in the file).
func (c *Checker) At(field string, line int) { c.pos0()[field] = line }

// AtNode says field is the value n, and the fields under it are n's:
// for a value placed at field from elsewhere in the file (a sweep's).
func (c *Checker) AtNode(field string, n *yaml.Node) { positions(c.pos0(), n, field) }

// Line is the line of field, 0 if it is not in the file.
func (c *Checker) Line(field string) int { return c.pos[field] }

// Count is how many problems are recorded.
func (c *Checker) Count() int { return len(c.problems) + c.more }

// Err is an *Error of the problems recorded, or nil.
func (c *Checker) Err() error {
	if c.Count() == 0 {
		return nil
	}
	problems := slices.Clone(c.problems)
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
	return &Error{File: c.File, Problems: problems, More: c.more}
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

// UnmarshalYAML decodes each value, collecting every problem. Unknown
// fields are found by Read and DecodeNode, which walk the values as V.
func (m *Ordered[V]) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, orderedMsg)}}
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
		if !isNull(n.Content[i+1]) {
			if err := n.Content[i+1].Decode(&v); err != nil {
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

const orderedMsg = "expected a mapping from names to settings (e.g. a: {cpus: 1}), not a list or a value"

// valueType is V, for the walk that finds unknown fields and bad values.
func (Ordered[V]) valueType() reflect.Type { return reflect.TypeFor[V]() }
