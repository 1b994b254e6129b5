package monitor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wanlab/wanlab/examples"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/tokens"
	"github.com/wanlab/wanlab/internal/scenario"
)

// Load reads and validates a configuration file.
func Load(path string) (*core.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the monitoring configuration: %w", err)
	}
	return Parse(path, data)
}

// Parse validates a configuration (core.Parse) and reads the tokens file
// it names.
func Parse(file string, data []byte) (*core.Config, error) {
	return core.ParseWith(file, data, core.Checks{Tokens: func(path string) error {
		_, err := tokens.Load(path)
		return err
	}})
}

// LoadNamed reads a configuration file, or a shipped one by name (monitor-lab).
func LoadNamed(name string) (*core.Config, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		if source, text, ok := examples.File(name); ok {
			return Parse(source, text)
		}
		return nil, fmt.Errorf("no monitoring configuration %q (a file, or a shipped one such as monitor-lab): %w", name, os.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the monitoring configuration: %w", err)
	}
	return Parse(name, data)
}

// TestbedFile reads and validates the scenario of the configuration's
// test-bed, and gives its source and text too.
func TestbedFile(c *core.Config) (f *scenario.File, source string, text []byte, err error) {
	if source, text, err = TestbedScenario(c); err != nil {
		return nil, "", nil, err
	}
	f, err = scenario.Parse(source, text, false)
	return f, source, text, err
}

// TestbedScenario reads the scenario of the configuration's test-bed: a
// file, relative to the configuration's folder, or a shipped one by name.
func TestbedScenario(c *core.Config) (source string, text []byte, err error) {
	path := c.Testbed
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(c.Source), path)
	}
	text, err = os.ReadFile(path)
	if err == nil {
		return path, text, nil
	}
	if source, text, ok := examples.File(c.Testbed); ok {
		return source, text, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("%s: testbed: no scenario file %s and no shipped scenario %q", c.Source, path, c.Testbed)
	}
	return "", nil, fmt.Errorf("%s: testbed: %w", c.Source, err)
}
