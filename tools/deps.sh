#!/bin/sh
# make deps: installs the Debian packages that wanlab's tests, benchmarks and
# demo need, as listed once in internal/testsupport/packages.txt, and records
# which are present in bin/deps-installed: from then on a test that needs one
# of them fails rather than skips if it goes missing.
#
#   tools/deps.sh [GROUP...]   groups: test, bench, demo, image (default: all)
#
# As root with apt-get, it installs what is missing (apt-get update only
# then) and says nothing when nothing is. Otherwise (not root, offline, no
# apt) it prints what is missing and the command that installs it, and exits
# 0: the tests that need those packages skip and are listed at the end.
set -u
cd "$(dirname "$0")/.."
list=internal/testsupport/packages.txt
stamp=bin/deps-installed
groups="${*:-test bench demo image}"

# wanted prints "package probe" for every package of the groups asked for.
wanted() {
	sed 's/#.*//' "$list" | while read -r pkg probe pkggroups; do
		[ -n "$pkg" ] || continue
		for g in $groups; do
			case ",$pkggroups," in *",$g,"*) echo "$pkg $probe"; break ;; esac
		done
	done
}

# present says whether a probe (a command, or an absolute path glob) finds its package.
present() {
	case "$1" in
	/*) for f in $1; do [ -e "$f" ] && return 0; done; return 1 ;;
	*) command -v "$1" >/dev/null 2>&1 ;;
	esac
}

missing() {
	wanted | while read -r pkg probe; do present "$probe" || printf '%s ' "$pkg"; done
}

# record writes every listed package that is present now, of any group.
record() {
	mkdir -p bin 2>/dev/null
	(groups="test bench demo"; wanted) | while read -r pkg probe; do present "$probe" && echo "$pkg"; done | sort -u 2>/dev/null >"$stamp" ||
		echo "make deps: cannot write $stamp: tests will skip, not fail, when a package goes missing"
}

todo=$(missing | sed "s/ *$//")
if [ -z "$todo" ]; then
	record
	exit 0
fi
advice="apt-get install -y --no-install-recommends $todo"
if [ "$(id -u)" != 0 ]; then
	echo "make deps: missing Debian packages: $todo"
	echo "make deps: not root, so not installing them; run: sudo $advice"
	echo "make deps: until then the tests that need them are skipped (listed at the end of make test)"
	record
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "make deps: missing packages: $todo"
	echo "make deps: this system has no apt-get: install their equivalents with its package manager"
	record
	exit 0
fi
echo "make deps: installing $todo"
export DEBIAN_FRONTEND=noninteractive
# The packages' system services (nginx on port 80, PostgreSQL, snmpd) are
# not wanted: tests start private instances. Where nothing says otherwise,
# a policy-rc.d keeps the installs from starting them.
policy=/usr/sbin/policy-rc.d
ours=""
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# made by wanlab make deps while it installs; removed after\nexit 101\n' >"$policy" && chmod 755 "$policy" && ours=1
fi
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends $todo >/dev/null; }; then
	echo "make deps: could not install $todo (offline, or no such package here?)"
	echo "make deps: the tests that need them are skipped; to retry: $advice"
fi
[ -z "$ours" ] || rm -f "$policy"
record
still=$(missing | sed "s/ *$//")
[ -z "$still" ] || echo "make deps: still missing: $still"
exit 0
