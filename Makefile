# wanlab: `make demo` and `make test` run as root (sudo make demo on a workstation).
GO      ?= go
BIN     := bin/wanlab
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/wanlab/wanlab/internal/cli.Version=$(VERSION)
FUZZTIME ?= 10s

.PHONY: build test unit fuzz demo bench proto clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/wanlab

# Unit tests, integration tests (they build real test-beds and need root; as
# another user they skip and say so), and a short fuzzing pass of each parser.
test: build
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@[ "$$(id -u)" = 0 ] || echo "make test: not root: the integration tests will be skipped (they need CAP_NET_ADMIN; run sudo make test)"
	$(GO) test -count=1 -timeout 10m $$($(GO) list ./... | grep -v /e2e)
	@# The integration tests run alone: their cross-checks against ping, irtt
	@# and iperf3 compare timings that other tests' CPU load would disturb.
	$(GO) test -count=1 -timeout 20m ./e2e
	$(MAKE) --no-print-directory fuzz FUZZTIME=5s

unit:
	$(GO) test -count=1 -short ./internal/... ./examples/...

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/scenario
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/units

# The main job on the embedded default: an Objectivity-style event server
# ramped at 100 and 10 Mbit/s (the bottleneck moves from the server's CPU to
# the network), archived in ./wanlab.db, analysed, and written up as an HTML
# report whose path it prints. About two minutes.
demo: build
	@[ "$$(id -u)" = 0 ] || { echo "make demo needs root (CAP_NET_ADMIN) to build network namespaces: run sudo make demo"; exit 1; }
	./$(BIN) run objectivity-demo --db wanlab.db --report .

# Engine and archive micro-benchmarks, then the test-bed and workload
# benchmarks (root) whose results are recorded in docs/benchmarks.md.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/linkemu ./internal/archive ./internal/report
	@[ "$$(id -u)" = 0 ] || { echo "make bench: the test-bed benchmarks need root: run sudo make bench"; exit 1; }
	$(GO) run ./bench/testbed -wanlab $(BIN)
	$(GO) run ./bench/workloads -wanlab $(BIN)

# Regenerates the agent API's Go code (committed, so builds need no protoc).
# Needs: apt-get install protobuf-compiler; go install
# google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12 and
# google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2.
proto:
	cd internal/agent/agentpb && PATH="$$PATH:$$(go env GOPATH)/bin" protoc --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative agent.proto

clean:
	rm -rf bin
