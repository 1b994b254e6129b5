package scenario

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wanlab/wanlab/internal/units"
)

// Machine-wide sysctls whose value is not a number (or numbers).
const (
	allowedCC    = "net.ipv4.tcp_allowed_congestion_control"
	availableCC  = "net.ipv4.tcp_available_congestion_control"
	defaultQdisc = "net.core.default_qdisc"
)

var (
	ccNameRE   = regexp.MustCompile(`^[a-z0-9_]{1,16}$`)
	moduleRE   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	byteSizeRE = regexp.MustCompile(`mem_(max|default)$`)
)

// machine validates the machine: section: which sysctls, normalised (sizes
// in bytes, lists single-spaced), and which modules.
func (v *bedChecker) machine(raw *rawMachine) Machine {
	var m Machine
	if raw == nil {
		return m
	}
	for _, key := range slices.Sorted(maps.Keys(raw.Sysctl)) {
		field, value := "machine.sysctl."+key, strings.TrimSpace(raw.Sysctl[key])
		if !machineWide[key] {
			if sysctlRE.MatchString(key) {
				v.fail(field, "%s is not a machine-wide setting: each host's namespace has its own; set it in the hosts' sysctl:", key)
			} else {
				v.fail(field, "%q is not a machine-wide network sysctl (those are %s)", key, strings.Join(slices.Sorted(maps.Keys(machineWide)), ", "))
			}
			continue
		}
		norm, ok := v.machineValue(field, key, value)
		if !ok {
			continue
		}
		if m.Sysctl == nil {
			m.Sysctl = map[string]string{}
		}
		m.Sysctl[key] = norm
	}
	for i, mod := range raw.Modules {
		if !moduleRE.MatchString(mod) {
			v.fail("machine.modules["+strconv.Itoa(i)+"]", "%q is not a kernel module's name (lower-case letters, digits and _, such as tcp_htcp)", mod)
			continue
		}
		if !slices.Contains(m.Modules, mod) {
			m.Modules = append(m.Modules, mod)
		}
	}
	return m
}

// machineValue checks one machine-wide setting's value and returns it as
// the kernel writes it.
func (v *bedChecker) machineValue(field, key, value string) (string, bool) {
	switch key {
	case availableCC:
		v.fail(field, "is read-only: the kernel lists what it has; load modules (machine.modules) to add to it")
		return "", false
	case allowedCC:
		names := strings.Fields(value)
		if len(names) == 0 {
			v.fail(field, "give the congestion controls hosts may choose, such as \"reno cubic bbr\"")
			return "", false
		}
		for _, n := range names {
			if !ccNameRE.MatchString(n) {
				v.fail(field, "%q is not a congestion control's name (such as cubic or htcp)", n)
				return "", false
			}
		}
		return strings.Join(names, " "), true
	case defaultQdisc:
		if !ccNameRE.MatchString(value) {
			v.fail(field, "%q is not a queueing discipline's name (such as pfifo_fast or fq)", value)
			return "", false
		}
		return value, true
	}
	if byteSizeRE.MatchString(key) {
		z, err := units.ParseSize(value)
		if err != nil || z <= 0 || z > 1<<31-1 {
			v.fail(field, "%q is not a size between 1 byte and 2GiB (such as 400MB)", value)
			return "", false
		}
		return strconv.FormatInt(int64(z), 10), true
	}
	nums := strings.Fields(value)
	if len(nums) == 0 {
		v.fail(field, "missing: give a number")
		return "", false
	}
	for _, n := range nums {
		if _, err := strconv.ParseUint(n, 10, 63); err != nil {
			v.fail(field, "%q is not a whole number (or whole numbers separated by spaces)", value)
			return "", false
		}
	}
	return strings.Join(nums, " "), true
}
