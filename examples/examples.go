// Package examples holds the scenario files shipped with wanlab. Those with
// workloads are the built-in scenarios: `wanlab scenarios` lists them and
// `wanlab run NAME` runs one by name.
package examples

import (
	"embed"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed *.yaml
var files embed.FS

// Scenario is one built-in scenario.
type Scenario struct {
	Name  string `json:"name"`
	Title string `json:"title"` // the file's first comment line
	// Seeds are the study files it reproduces, from its "seed:" comments.
	Seeds []string `json:"seeds"`
	File  string   `json:"file"` // under examples/ in the source tree
	Text  []byte   `json:"-"`
}

// Builtins lists the built-in scenarios by name.
func Builtins() []Scenario {
	entries, _ := files.ReadDir(".")
	var out []Scenario
	for _, e := range entries {
		text, _ := files.ReadFile(e.Name())
		var top struct {
			Workloads []yaml.Node `yaml:"workloads"`
		}
		if yaml.Unmarshal(text, &top) != nil || len(top.Workloads) == 0 {
			continue // a test-bed only, such as wan-lan.yaml
		}
		s := Scenario{Name: strings.TrimSuffix(e.Name(), path.Ext(e.Name())), File: "examples/" + e.Name(), Text: text}
		for _, line := range strings.Split(string(text), "\n") {
			c, ok := strings.CutPrefix(line, "#")
			if !ok {
				break
			}
			c = strings.TrimSpace(c)
			if s.Title == "" {
				s.Title = c
			}
			if seed, ok := strings.CutPrefix(c, "seed:"); ok {
				s.Seeds = append(s.Seeds, strings.TrimSpace(seed))
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Scenario) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup finds a built-in scenario by name.
func Lookup(name string) (Scenario, bool) {
	for _, s := range Builtins() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// File finds any shipped file by name, with or without .yaml: a built-in
// scenario, a test-bed alone (wan-lan) or a monitoring configuration
// (monitor-lab). The source is its place in the source tree.
func File(name string) (source string, text []byte, ok bool) {
	name = strings.TrimSuffix(name, ".yaml")
	if strings.ContainsAny(name, "/\\") {
		return "", nil, false
	}
	text, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return "", nil, false
	}
	return "examples/" + name + ".yaml", text, true
}
