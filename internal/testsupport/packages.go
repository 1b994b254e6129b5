// Package testsupport gives wanlab's tests what they need from the machine:
// the Debian packages they use (one list, packages.txt, which `make deps`
// installs from), and private instances of real servers (PostgreSQL first)
// that a test binary starts on free loopback ports and removes when it ends.
// A test whose package is missing skips and says so, unless the package ought
// to be there (CI=true, or `make deps` installed it): then it fails.
package testsupport

import (
	"bufio"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

//go:embed packages.txt
var packagesText string

// Package is one line of packages.txt.
type Package struct {
	Name string
	// Probe shows the package is installed: a command on PATH, or an
	// absolute path that may hold a * glob.
	Probe  string
	Groups []string
	Why    string
}

// Packages parses packages.txt.
func Packages() ([]Package, error) {
	var out []Package
	sc := bufio.NewScanner(strings.NewReader(packagesText))
	for n := 1; sc.Scan(); n++ {
		line, why, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("packages.txt:%d: want package, probe and groups, got %q", n, line)
		}
		out = append(out, Package{Name: f[0], Probe: f[1], Groups: strings.Split(f[2], ","), Why: strings.TrimSpace(why)})
	}
	return out, sc.Err()
}

// Installed reports whether the package's probe finds it.
func (p Package) Installed() bool {
	if filepath.IsAbs(p.Probe) {
		m, _ := filepath.Glob(p.Probe)
		return len(m) > 0
	}
	_, err := exec.LookPath(p.Probe)
	return err == nil
}

// Need skips t unless every named package is installed. Where the packages
// ought to be there (under CI=true, or once `make deps` has recorded them as
// installed), a missing one fails t instead: a skip must never hide a
// broken set-up.
func Need(t testing.TB, names ...string) {
	t.Helper()
	all, err := Packages()
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, name := range names {
		i := slices.IndexFunc(all, func(p Package) bool { return p.Name == name })
		if i < 0 {
			t.Fatalf("testsupport.Need(%q): not in internal/testsupport/packages.txt; add it there", name)
		}
		if !all[i].Installed() {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return
	}
	reason := fmt.Sprintf("needs the Debian package %s (make deps installs it)", strings.Join(missing, ", "))
	if expected := expectedInstalled(); os.Getenv("CI") == "true" || slices.ContainsFunc(missing, func(m string) bool { return expected[m] }) {
		t.Fatalf("%s, but it is missing although it should be installed (CI=true or make deps recorded it)", reason)
	}
	t.Skip(reason)
}

// NeedRoot skips t unless it runs as root, as the integration tests need.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN and cgroups): run sudo make test")
	}
}

// StampFile is where `make deps` records the packages it found or installed,
// relative to the module root.
const StampFile = "bin/deps-installed"

// expectedInstalled reads the packages `make deps` recorded.
func expectedInstalled() map[string]bool {
	root, err := moduleRoot()
	if err != nil {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(root, StampFile))
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, name := range strings.Fields(string(data)) {
		out[name] = true
	}
	return out
}

// moduleRoot finds the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}
