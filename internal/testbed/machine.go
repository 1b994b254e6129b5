package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/scenario"
)

// FixedMachineEnv, set to "fixed", forbids test-beds to change the machine:
// one that needs a machine-wide setting the machine does not have fails
// to come up, saying what to set.
const FixedMachineEnv = "WANLAB_MACHINE"

// MachineState is what a test-bed needed of the machine and what it did.
type MachineState struct {
	Sysctl  []MachineSetting `json:"sysctl,omitempty"`
	Modules []ModuleLoad     `json:"modules,omitempty"`
}

// MachineSetting is one machine-wide sysctl a test-bed declared: the value
// it wanted, the machine's before it came up, and the value in force for
// its life (Before when the machine already had enough).
type MachineSetting struct {
	Key    string `json:"key"`
	Wanted string `json:"wanted"`
	Before string `json:"before"`
	After  string `json:"after"`
	// Missing are congestion controls wanted but not in this kernel.
	Missing []string `json:"missing,omitempty"`
}

// Changed says whether the test-bed changed the setting.
func (s MachineSetting) Changed() bool { return s.After != s.Before }

// ModuleLoad is a kernel module a test-bed asked for and whether it is loaded.
type ModuleLoad struct {
	Name   string `json:"name"`
	Loaded bool   `json:"loaded"`
	// Why says how it was found loaded, or why it could not be loaded.
	Why string `json:"why"`
}

// Lines are the state in words, one line each, for a run's record and
// testbed status.
func (m *MachineState) Lines() []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, s := range m.Sysctl {
		line := fmt.Sprintf("machine: %s was %q, needed %q: ", s.Key, s.Before, s.Wanted)
		if s.Changed() {
			line += fmt.Sprintf("set to %q for the test-bed's life", s.After)
		} else {
			line += "left as it was"
		}
		if len(s.Missing) > 0 {
			line += fmt.Sprintf(" (not in this kernel: %s)", strings.Join(s.Missing, ", "))
		}
		out = append(out, line)
	}
	for _, mod := range m.Modules {
		if mod.Loaded {
			out = append(out, fmt.Sprintf("machine: module %s loaded (%s)", mod.Name, mod.Why))
		} else {
			out = append(out, fmt.Sprintf("machine: module %s not loaded: %s", mod.Name, mod.Why))
		}
	}
	return out
}

// ledger records, machine-wide, the settings that live test-beds changed:
// the value before the first of them, the value set, and who needs it. The
// last test-bed to go puts the value back.
type ledger map[string]*ledgerEntry

type ledgerEntry struct {
	Original string   `json:"original"`
	Applied  string   `json:"applied"`
	Users    []string `json:"users"`
}

func ledgerPath() string { return filepath.Join(RunDir, "machine.json") }

// withLedger runs f on the ledger under its own lock (a test-bed's daemon
// tears down without the run lock) and saves what f leaves.
func withLedger(f func(l ledger) error) error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(RunDir, ".machine.lock"), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("opening the machine settings' lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking the machine settings: %w", err)
	}
	l := ledger{}
	data, err := os.ReadFile(ledgerPath())
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &l); err != nil {
			return fmt.Errorf("%s is corrupt: %w", ledgerPath(), err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	ferr := f(l)
	if len(l) == 0 {
		if err := os.Remove(ledgerPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errors.Join(ferr, err)
		}
		return ferr
	}
	out, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return errors.Join(ferr, err)
	}
	tmp := ledgerPath() + ".tmp"
	if err := writeFile(tmp, out); err != nil {
		return errors.Join(ferr, err)
	}
	return errors.Join(ferr, os.Rename(tmp, ledgerPath()))
}

// machineUsers are the test-beds the ledger says need a machine setting.
func machineUsers() []string {
	data, err := os.ReadFile(ledgerPath())
	if err != nil {
		return nil
	}
	var l ledger
	if json.Unmarshal(data, &l) != nil {
		return nil
	}
	var users []string
	for _, e := range l {
		for _, u := range e.Users {
			if !slices.Contains(users, u) {
				users = append(users, u)
			}
		}
	}
	return users
}

// applyMachine loads the modules and raises the sysctls that test-bed name
// declares, recording each change in the ledger as it is made so that
// Teardown puts it back even if this fails half-way.
func applyMachine(name string, m scenario.Machine) (*MachineState, error) {
	if len(m.Sysctl) == 0 && len(m.Modules) == 0 {
		return nil, nil
	}
	st := &MachineState{}
	fixed := os.Getenv(FixedMachineEnv) == "fixed"
	for _, mod := range m.Modules {
		st.Modules = append(st.Modules, loadModule(mod, fixed))
	}
	for _, key := range slices.Sorted(maps.Keys(m.Sysctl)) {
		cur, err := readSysctl(key)
		if err != nil {
			return st, err
		}
		s := MachineSetting{Key: key, Wanted: m.Sysctl[key], Before: cur}
		s.After, s.Missing = target(key, cur, s.Wanted)
		st.Sysctl = append(st.Sysctl, s)
	}
	var refused []string
	for _, s := range st.Sysctl {
		if s.Changed() {
			refused = append(refused, fmt.Sprintf("%s is %q and the test-bed needs %q (sysctl -w %s=%q)", s.Key, s.Before, s.After, s.Key, s.After))
		}
	}
	if fixed && len(refused) > 0 {
		return st, fmt.Errorf("%s=fixed forbids changing this machine, and the test-bed needs machine-wide settings it does not have: %s. Set them yourself, or unset %s to let the test-bed set them for its life",
			FixedMachineEnv, strings.Join(refused, "; "), FixedMachineEnv)
	}
	err := withLedger(func(l ledger) error {
		for _, s := range st.Sysctl {
			e := l[s.Key]
			if !s.Changed() {
				// Another test-bed's value may be what satisfies this one:
				// it stays until both are gone.
				if e != nil && !slices.Contains(e.Users, name) {
					e.Users = append(e.Users, name)
				}
				continue
			}
			if err := writeSysctl(s.Key, s.After); err != nil {
				return err
			}
			if e == nil {
				e = &ledgerEntry{Original: s.Before}
				l[s.Key] = e
			}
			e.Applied = s.After
			if !slices.Contains(e.Users, name) {
				e.Users = append(e.Users, name)
			}
		}
		return nil
	})
	return st, err
}

// restoreMachine lets go of what test-bed name needed of the machine: a
// setting no live test-bed needs any more gets its value from before the
// first of them, unless someone changed it since (then it is left alone).
func restoreMachine(name string) error {
	if _, err := os.Stat(ledgerPath()); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return withLedger(func(l ledger) error {
		var errs []error
		for _, key := range slices.Sorted(maps.Keys(l)) {
			e := l[key]
			if !slices.Contains(e.Users, name) {
				continue
			}
			e.Users = slices.DeleteFunc(e.Users, func(u string) bool { return u == name })
			if len(e.Users) > 0 {
				continue
			}
			delete(l, key)
			cur, err := readSysctl(key)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if cur != e.Applied {
				log.Printf("machine: %s is %q, not the %q test-bed %s set: someone changed it since, so it stays", key, cur, e.Applied, name)
				continue
			}
			if err := writeSysctl(key, e.Original); err != nil {
				errs = append(errs, fmt.Errorf("putting back %s: %w", key, err))
			}
		}
		return errors.Join(errs...)
	})
}

// target is the value a setting must have to give the test-bed what it
// wants without taking from the machine: the larger of each number, the
// union of congestion controls (those the kernel has; missing lists the
// others), or the wanted value.
func target(key, cur, wanted string) (value string, missing []string) {
	switch key {
	case "net.ipv4.tcp_allowed_congestion_control":
		have, _ := readSysctl("net.ipv4.tcp_available_congestion_control")
		names := strings.Fields(cur)
		for _, n := range strings.Fields(wanted) {
			switch {
			case slices.Contains(names, n):
			case slices.Contains(strings.Fields(have), n):
				names = append(names, n)
			default:
				missing = append(missing, n)
			}
		}
		return strings.Join(names, " "), missing
	case "net.core.default_qdisc":
		return wanted, nil
	}
	c, w := strings.Fields(cur), strings.Fields(wanted)
	if len(c) != len(w) {
		return wanted, nil
	}
	out := make([]string, len(w))
	for i := range w {
		a, errA := strconv.ParseUint(c[i], 10, 64)
		b, errB := strconv.ParseUint(w[i], 10, 64)
		out[i] = w[i]
		if errA == nil && errB == nil && a > b {
			out[i] = c[i]
		}
	}
	return strings.Join(out, " "), nil
}

func sysctlPath(key string) string { return "/proc/sys/" + strings.ReplaceAll(key, ".", "/") }

// readSysctl reads a machine-wide sysctl in the machine's own namespace
// (the daemon's), with its fields single-spaced.
func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", key, err)
	}
	return strings.Join(strings.Fields(string(b)), " "), nil
}

func writeSysctl(key, value string) error {
	if err := os.WriteFile(sysctlPath(key), []byte(value), 0o644); err != nil {
		return fmt.Errorf("setting %s to %q: %w", key, value, err)
	}
	return nil
}

// loadModule loads a kernel module with modprobe unless it is loaded or
// built in. A module is never unloaded: something else may use it by then.
func loadModule(name string, fixed bool) ModuleLoad {
	if _, err := os.Stat("/sys/module/" + name); err == nil {
		return ModuleLoad{Name: name, Loaded: true, Why: "already loaded or built in"}
	}
	if fixed {
		return ModuleLoad{Name: name, Why: FixedMachineEnv + "=fixed forbids loading it"}
	}
	modprobe, err := exec.LookPath("modprobe")
	if err != nil {
		return ModuleLoad{Name: name, Why: "this machine has no modprobe"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, modprobe, "-q", "--", name).CombinedOutput()
	if err != nil {
		why := strings.TrimSpace(string(out))
		if why == "" {
			why = err.Error()
		}
		return ModuleLoad{Name: name, Why: "modprobe: " + why}
	}
	return ModuleLoad{Name: name, Loaded: true, Why: "modprobe"}
}
