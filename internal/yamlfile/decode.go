package yamlfile

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// DecodeNode decodes n into v (a pointer) as Read decodes a file: strictly
// (an unknown field is a problem, ErrUnknownField) and with every problem
// at its line and field, a dotted path under n ("" for n itself, "rate",
// "clients[1]"). What did not decode is left zero. It reads the node as
// it is, never re-encoded, so that lines and merge keys (<<) stay as
// written.
func DecodeNode(n *yaml.Node, v any) []Problem {
	t := reflect.TypeOf(v).Elem()
	w := walker{}
	w.walk(n, t, "")
	err := n.Decode(v)
	if err == nil {
		return w.problems
	}
	// Something did not decode: walk again checking every value, to say
	// which field it is.
	w = walker{types: true}
	w.walk(n, t, "")
	if len(w.problems) == 0 {
		w.problems = fromYAML(err)
		for i := range w.problems {
			w.problems[i].Line = max(w.problems[i].Line, n.Line)
		}
		return w.problems
	}
	// Decode again without the values that did not decode, so that their
	// fields are left as if not written (nil, not a half-made zero).
	failed := map[string]bool{}
	for _, p := range w.problems {
		if p.Err == nil && p.Field != "" {
			failed[p.Field] = true
		}
	}
	out := reflect.ValueOf(v).Elem()
	out.Set(reflect.Zero(t))
	_ = without(n, "", failed).Decode(v) // its problems are w's
	return w.problems
}

// without is a copy of n with the values at the failed paths left out,
// merge keys resolved and aliases followed.
func without(n *yaml.Node, path string, failed map[string]bool) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	out := *n
	out.Anchor = ""
	switch n.Kind {
	case yaml.MappingNode:
		m := MergedMapping(n)
		out.Content = nil
		for i := 0; i+1 < len(m.Content); i += 2 {
			child := join(path, m.Content[i].Value)
			if !failed[child] {
				out.Content = append(out.Content, m.Content[i], without(m.Content[i+1], child, failed))
			}
		}
	case yaml.SequenceNode:
		out.Content = nil
		for i, c := range n.Content {
			child := fmt.Sprintf("%s[%d]", path, i)
			if !failed[child] {
				out.Content = append(out.Content, without(c, child, failed))
			}
		}
	}
	return &out
}

// walker finds unknown fields under a node read as a Go type, and with
// types, the values that do not decode as their field's type.
type walker struct {
	types    bool
	problems []Problem
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	nodeType        = reflect.TypeFor[yaml.Node]()
)

// valueTyped is Ordered: a mapping of names to values of one type.
type valueTyped interface{ valueType() reflect.Type }

func (w *walker) fail(line int, field string, kind error, format string, args ...any) {
	w.problems = append(w.problems, Problem{Line: line, Field: field, Msg: fmt.Sprintf(format, args...), Err: kind})
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || isNull(n) || t == nodeType || t.Kind() == reflect.Interface {
		return
	}
	if vt, ok := reflect.Zero(t).Interface().(valueTyped); ok {
		if n.Kind != yaml.MappingNode {
			w.fail(n.Line, path, nil, "%s", orderedMsg)
			return
		}
		w.entries(n, path, func(k, v *yaml.Node) { w.walk(v, vt.valueType(), join(path, k.Value)) })
		return
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if !w.types {
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			for _, p := range fromYAML(err) {
				p.Line = max(p.Line, n.Line)
				if p.Err == nil {
					p.Field = path
				}
				w.problems = append(w.problems, p)
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.mismatch(n, t, path)
			return
		}
		fields := structFields(t)
		w.entries(n, path, func(k, v *yaml.Node) {
			ft, ok := fields[k.Value]
			if !ok {
				w.fail(k.Line, join(path, k.Value), ErrUnknownField, "unknown field %q", k.Value)
				return
			}
			w.walk(v, ft, join(path, k.Value))
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.mismatch(n, t, path)
			return
		}
		w.entries(n, path, func(k, v *yaml.Node) { w.walk(v, t.Elem(), join(path, k.Value)) })
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			w.mismatch(n, t, path)
			return
		}
		if !w.types && scalar(t.Elem()) {
			return // no field to be unknown
		}
		for i, c := range n.Content {
			w.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			w.mismatch(n, t, path)
			return
		}
		if w.types && n.Decode(reflect.New(t).Interface()) != nil {
			w.mismatch(n, t, path)
		}
	}
}

// entries calls f for each entry of a mapping, those merged in with <<
// included (after the mapping's own, which they do not override), and
// with types reports keys given twice.
func (w *walker) entries(n *yaml.Node, path string, f func(k, v *yaml.Node)) {
	seen := map[string]int{}
	var merged []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			merged = append(merged, mergeSources(v)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			if w.types {
				w.fail(k.Line, "", nil, "duplicate name %q (first defined at line %d)", k.Value, first)
			}
			continue
		}
		seen[k.Value] = k.Line
		f(k, v)
	}
	for _, m := range merged {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if _, own := seen[m.Content[i].Value]; !own && m.Content[i].ShortTag() != "!!merge" {
				seen[m.Content[i].Value] = m.Content[i].Line
				f(m.Content[i], m.Content[i+1])
			}
		}
	}
}

// mergeSources are the mappings a merge key's value names: one, or a list
// of them (the first wins).
func mergeSources(v *yaml.Node) []*yaml.Node {
	for v != nil && v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch {
	case v == nil:
		return nil
	case v.Kind == yaml.MappingNode:
		return []*yaml.Node{MergedMapping(v)}
	case v.Kind == yaml.SequenceNode:
		var out []*yaml.Node
		for _, c := range v.Content {
			out = append(out, mergeSources(c)...)
		}
		return out
	}
	return nil
}

// MergedMapping is a mapping with its merge keys (<<: *anchor, or a list
// of anchors) resolved as YAML says: its own keys first, then those of
// the merged mappings that it does not have, the first merged winning.
// Aliases of its values are followed. A mapping without merge keys is
// returned as it is.
func MergedMapping(m *yaml.Node) *yaml.Node {
	hasMerge := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		hasMerge = hasMerge || m.Content[i].ShortTag() == "!!merge"
	}
	if !hasMerge {
		return m
	}
	out := *m
	out.Content = nil
	have := map[string]bool{}
	var merged []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.ShortTag() == "!!merge" {
			merged = append(merged, mergeSources(v)...)
			continue
		}
		have[k.Value] = true
		out.Content = append(out.Content, k, v)
	}
	for _, src := range merged {
		for i := 0; i+1 < len(src.Content); i += 2 {
			if k := src.Content[i]; !have[k.Value] {
				have[k.Value] = true
				out.Content = append(out.Content, k, src.Content[i+1])
			}
		}
	}
	return &out
}

// mismatch reports a value of the wrong kind or type for its field.
func (w *walker) mismatch(n *yaml.Node, t reflect.Type, path string) {
	if !w.types {
		return
	}
	want := goTypeWord(t.String())
	if t.Kind() == reflect.Struct || t.Kind() == reflect.Map {
		want = "a mapping"
	}
	switch n.Kind {
	case yaml.MappingNode:
		w.fail(n.Line, path, nil, "found a mapping where %s is expected", want)
	case yaml.SequenceNode:
		w.fail(n.Line, path, nil, "found a list where %s is expected", want)
	default:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		w.fail(n.Line, path, nil, "%q is %s where %s is expected", v, tagWord(n.ShortTag()), want)
	}
}

// scalar says whether t is read from one YAML value, with no fields.
func scalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64, reflect.String:
		return !reflect.PointerTo(t).Implements(unmarshalerType)
	}
	return false
}

func tagWord(tag string) string {
	switch tag {
	case "!!str":
		return "text"
	case "!!int":
		return "a whole number"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!timestamp":
		return "a time"
	}
	return yamlKindWord(strings.TrimPrefix(tag, "!!"))
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// structFields maps the YAML keys of a struct to their fields' types, as
// yaml.v3 reads them: the yaml tag's name or the lowercased field name,
// inline structs' keys included, "-" and unexported fields left out.
func structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" && !strings.Contains(string(f.Tag), ":") {
			tag = string(f.Tag)
		}
		if tag == "-" {
			continue
		}
		name, flags, _ := strings.Cut(tag, ",")
		if strings.Contains(flags, "inline") && f.Type.Kind() == reflect.Struct {
			for k, v := range structFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	fieldCache.Store(t, out)
	return out
}
