# wanlab: `make demo` and `make test` run as root (sudo make demo on a workstation).
GO      ?= go
BIN     := bin/wanlab
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/wanlab/wanlab/internal/cli.Version=$(VERSION)
FUZZTIME ?= 10s
SIM      := bin/wanlab-sim
SIMSRC   := $(wildcard sim/*.cpp sim/*.hpp)
SIMFLAGS := -O2 -std=c++17 -Wall

EVENTS  := bin/test-events.jsonl
TESTSUM := bin/testsum

.PHONY: build deps test unit fuzz vuln demo bench image proto clean

build: $(SIM)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/wanlab

# bin/wanlab-sim, the simulator wanlab predict runs its models on: C++ on
# SimGrid, rebuilt when its source is newer. Where SimGrid's or nlohmann-json's
# headers are missing it says so and the build goes on: only predict needs it.
$(SIM): $(SIMSRC)
	@if printf '#include <simgrid/s4u.hpp>\n#include <nlohmann/json.hpp>\n' | $(CXX) -std=c++17 -E -x c++ - >/dev/null 2>&1; then \
		mkdir -p bin && echo "$(CXX) $(SIMFLAGS) -o $@ $(filter %.cpp,$^) -lsimgrid" && \
		$(CXX) $(SIMFLAGS) -o $@.tmp $(filter %.cpp,$^) -lsimgrid && mv $@.tmp $@; \
	else \
		echo "make build: bin/wanlab-sim not built: wanlab predict needs apt-get install -y libsimgrid-dev nlohmann-json3-dev (and g++), then make build"; \
	fi

# What the tests, benchmarks and demo need: the Debian packages listed in
# internal/testsupport/packages.txt (installed as root, else listed with the
# command that installs them) and the Go modules.
deps:
	@tools/deps.sh test bench demo
	@$(GO) mod download

# Unit tests, integration tests (they build real test-beds and need root; as
# another user they skip and say so), and a short fuzzing pass of each parser.
# Tests that need a server (PostgreSQL) start a private one. Each run ends
# with one line of counts and the reasons of every skipped test.
test: deps build
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@$(MAKE) --no-print-directory vuln
	@[ "$$(id -u)" = 0 ] || echo "make test: not root: the integration tests will be skipped (they need CAP_NET_ADMIN; run sudo make test)"
	@rm -f $(EVENTS)
	@$(GO) build -o $(TESTSUM) ./tools/testsum
	@# Four packages at once: most unit tests wait on sockets and timers;
	@# those that measure time (a cgroup's CPU quota) bound it from one side.
	-$(GO) test -json -p 4 -count=1 -timeout 10m $$($(GO) list ./... | grep -v /e2e) | $(TESTSUM) -record $(EVENTS)
	@# The integration tests run alone: their cross-checks against ping, irtt
	@# and iperf3 compare timings that other tests' CPU load would disturb.
	@# Only those that mostly wait (TestServe, TestServeShared,
	@# TestServeFamilies, TestRealHostsFaults, TestObjectivityNetworkBound,
	@# TestIncidents, TestIncidentTruth, TestRunArchiveDiskFull) run side by
	@# side, four at once, after the others.
	-$(GO) test -json -parallel 4 -count=1 -timeout 30m ./e2e | $(TESTSUM) -record $(EVENTS)
	@# A count, not a duration: Go 1.26's fuzz coordinator can fail a
	@# duration-bound run at its deadline with "context deadline exceeded"
	@# and no crasher (golang/go#75804, fixed in Go 1.27).
	-$(MAKE) --no-print-directory fuzz FUZZTIME=10000x FUZZJSON="-json" FUZZPIPE="| $(TESTSUM) -record $(EVENTS)"
	@echo; $(TESTSUM) -summary $(EVENTS)

# Known vulnerabilities in the code paths wanlab uses, from govulncheck
# (pinned in go.mod as a tool). Its database is on the network: where it
# cannot be reached this says so and checks nothing.
vuln:
	@out=$$($(GO) tool govulncheck ./... 2>&1); rc=$$?; \
	if echo "$$out" | grep -q "fetching vulnerabilities"; then \
		echo "make vuln: govulncheck could not reach its database (vuln.go.dev): dependencies NOT checked for known vulnerabilities"; \
	elif [ $$rc -ne 0 ]; then echo "$$out"; exit $$rc; \
	else echo "make vuln: govulncheck found no known vulnerability in the code wanlab calls"; fi

unit:
	$(GO) test -count=1 -short ./internal/... ./examples/...

# Each fuzz target of the parsers and decoders, for FUZZTIME: a duration, or
# a count of executions such as 40000x (which cannot hit Go 1.26's deadline
# race, golang/go#75804). A target may name its own count after a second
# colon: FuzzTrace parses whole trace files, 40000 of them take half a minute.
FUZZ_TARGETS := ./internal/scenario:FuzzParse ./internal/units:FuzzParse \
	./internal/workload/transfer:FuzzCopyRange ./internal/workload/mesh:FuzzServeStream \
	./internal/policy:FuzzParse ./internal/realhosts:FuzzParseInventory ./internal/workload/token:FuzzAdmitted \
	./internal/monitor/core:FuzzParse ./internal/monitor/web:FuzzAPI ./internal/monitor/web:FuzzHostCheck ./internal/scenario:FuzzTrace:10000x ./internal/linkemu:FuzzRouterAnswer ./internal/linkemu:FuzzSuperPacket ./internal/workload/tcpwatch:FuzzSockDiag \
	./internal/agent:FuzzDecodeRequest ./internal/routing:FuzzGraph ./internal/workload/probe:FuzzReflect ./internal/icmpecho:FuzzDecodeReply ./internal/stamp:FuzzDecode ./internal/iperf3:FuzzDecode
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; time=$(FUZZTIME); \
		case "$$rest:$(FUZZTIME)" in *:*:*x) time=$${rest#*:} ;; esac; \
		echo "fuzz $$pkg $$name for $$time"; \
		$(GO) test $(FUZZJSON) -run '^$$' -fuzz "^$$name$$" -fuzztime $$time $$pkg $(FUZZPIPE); \
	done

# The main job on the embedded default: an Objectivity-style event server
# ramped at 100 and 10 Mbit/s (the bottleneck moves from the server's CPU to
# the network), archived in ./wanlab.db; the same scenario predicted on
# SimGrid and checked against the run (a few seconds); then the run analysed
# and written up as an HTML report, whose path it prints, with the
# prediction beside what was measured. About two minutes. Without
# bin/wanlab-sim (SimGrid could not be installed) the demo ends all the same
# and says how to get the prediction.
demo: build
	@tools/deps.sh demo
	@[ "$$(id -u)" = 0 ] || { echo "make demo needs root (CAP_NET_ADMIN) to build network namespaces: run sudo make demo"; exit 1; }
	@# build ran before deps.sh installed SimGrid on a fresh machine: build the simulator now
	@[ -x $(SIM) ] || $(MAKE) --no-print-directory $(SIM)
	./$(BIN) run objectivity-demo --db wanlab.db --json > bin/demo-run.json || { cat bin/demo-run.json; exit 1; }
	@run=$$(sed -n 's/^ *"run": *\([0-9][0-9]*\),*$$/\1/p' bin/demo-run.json | head -n 1); \
	[ -n "$$run" ] || { echo "make demo: no run number in bin/demo-run.json"; exit 1; }; \
	predict="./$(BIN) predict objectivity-demo --check $$run --db wanlab.db"; ok=1; \
	if [ -x $(SIM) ]; then \
		echo "$$predict"; $$predict > /dev/null || { ok=0; echo "make demo: the prediction failed (above): the report shows none"; }; \
	else \
		echo "make demo: $(SIM) is missing, so run $$run has no prediction beside it: apt-get install -y libsimgrid-dev nlohmann-json3-dev, make build, then $$predict and ./$(BIN) report $$run --db wanlab.db"; \
	fi; \
	echo "./$(BIN) analyze $$run --db wanlab.db"; ./$(BIN) analyze $$run --db wanlab.db && \
	echo && printf 'report: ' && ./$(BIN) report $$run --db wanlab.db --out . && [ $$ok = 1 ]

# The agent's container image (deploy/Containerfile): the static binary and
# nothing else, built with podman (or docker), tagged wanlab-agent:VERSION and
# wanlab-agent:latest. No registry is needed: podman save exports it.
IMAGE_TOOL ?= $(shell command -v podman || command -v docker)
image:
	@tools/deps.sh image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/image/wanlab-static ./cmd/wanlab
	@[ -n "$(IMAGE_TOOL)" ] || { echo "make image needs podman or docker: apt-get install podman"; exit 1; }
	cp deploy/Containerfile bin/image/Containerfile
	$(IMAGE_TOOL) build --tag wanlab-agent:$(VERSION) --tag wanlab-agent:latest bin/image

# Engine and archive micro-benchmarks, then the test-bed and workload
# benchmarks (root) whose results are recorded in docs/benchmarks.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/linkemu ./internal/archive ./internal/report ./internal/monitor/... ./internal/dashboard
	$(GO) test -run '^$$' -bench RunCalls6000 -benchtime 1x ./internal/sim
	$(GO) run ./bench/scale -wanlab $(BIN)
	@[ "$$(id -u)" = 0 ] || { echo "make bench: the test-bed benchmarks need root: run sudo make bench"; exit 1; }
	$(GO) run ./bench/testbed -wanlab $(BIN)
	$(GO) run ./bench/workloads -wanlab $(BIN)
	$(GO) test -run '^$$' -bench 'RealHosts|Serve20Hosts|CostAccuracy|TimedChange|TraceReplay|CrossTraffic|Capture|BandwidthEstimates|Watch|Incidents|QuietHour|TwinKnownTruth|TwinInventory' -benchtime 1x -timeout 240m ./e2e

# Regenerates the agent API's Go code (committed, so builds need no protoc).
# Needs: apt-get install protobuf-compiler; go install
# google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12 and
# google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2.
proto:
	cd internal/agent/agentpb && PATH="$$PATH:$$(go env GOPATH)/bin" protoc --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative agent.proto

clean:
	rm -rf bin
