# ledgermq build, test and run targets. `make help` lists them.

SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c
GO          ?= go
BIN         := bin/ledgermq
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
LDFLAGS     := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
STATICCHECK_VERSION := v0.8.2
BUF_VERSION := v1.75.0
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck
FUZZTIME    ?= 3s
RUN_DIR     ?= .run

.PHONY: all build test lint fmt-check vet staticcheck unit fuzz fuzz-short bench chaos run clean help proto image

all: build

help:
	@echo "make run        start a local name server and 3-node broker group (see README)"
	@echo "make test       gofmt check, go vet, staticcheck, go test -race ./..., short fuzz"
	@echo "make build      static binary in $(BIN)"
	@echo "make bench      benchmarks of every package"
	@echo "make fuzz       every fuzz target for FUZZTIME (default 3s; try FUZZTIME=60s)"
	@echo "make image      the container image ledgermq:$(VERSION) (Dockerfile; needs docker or podman)"
	@echo "make proto      regenerate grpcapi/v2pb from grpcapi/proto (buf; not part of make test)"
	@echo "make chaos      TestDevChaos with 30 process faults, the broken builds, power loss and disk full, then every jepsen nemesis for CHAOS_TIME (5m) each, and kill,pause,partition with rocketmq-client-go sending"

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/ledgermq

# The container image, when a container engine is present.
ENGINE ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)
image:
	@if [ -z "$(ENGINE)" ] || ! $(ENGINE) info >/dev/null 2>&1; then echo "make image: no running docker or podman engine" >&2; exit 1; fi
	$(ENGINE) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t ledgermq:$(VERSION) .

test: lint unit fuzz-short

# The Go messages and gRPC stubs of the RocketMQ 5 protocol (grpcapi/v2pb)
# from grpcapi/proto, by buf and the protoc-gen-go plugins at the versions
# pinned in grpcapi/buf.gen.yaml. The output is checked in; make test does
# not run this.
proto:
	cd grpcapi && $(GO) run github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION) generate

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

unit:
	$(GO) test -race -count=1 -timeout 15m ./...
	LEDGERMQ_TEST_TWO_LOG=1 $(GO) test -race -count=1 -timeout 10m ./dledger/
	$(GO) test -count=1 -timeout 10m -run '^TestManyTopics$$' -v ./store/ | grep -E '^(---|ok|FAIL|\s+manytopics)'
	$(GO) test -count=1 -timeout 5m -run '^TestRealClientOrderly' ./compat/

# Every Fuzz* target, briefly (part of make test): a count, not a duration,
# because a timed run can end in a spurious "context deadline exceeded" from
# the fuzz runner on a loaded machine.
fuzz-short:
	@FUZZTIME=300x scripts/fuzz.sh

# Every Fuzz* target for FUZZTIME each.
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./...

# The dev cluster under load through 30 seeded process faults (kill -9,
# SIGSTOP) instead of make test's 6. Without -race: make test's short run
# already checks the harness for races, and here the producers keep pace.
# Then `ledgermq jepsen run` once per nemesis for CHAOS_TIME each (and the
# partitions again on 5 nodes, for the bridge and ring shapes), every run
# directory kept in CHAOS_DIR; the verdict lines are collected in
# CHAOS_DIR/verdicts.txt and any FAIL fails the target (under the default
# ASYNC_FLUSH a power loss of every node is narrowed to the leader, so
# power runs once more with SYNC_FLUSH, where it hits every node); then once more
# under kill,partition with the transactions, consumer-offset register
# and POP workloads beside the queue (CHAOS_WORKLOADS), and every nemesis on 5
# nodes with TLS and the ACL on, and kills, pauses, partitions and a whole
# group down on two groups of 3 (jepsen run --groups 2), and power loss,
# full disks, membership changes and hostile frames on two groups of 3
# with CHAOS_WORKLOADS, and last kills, pauses and partitions on 3 nodes
# with rocketmq-client-go's producer sending (compat's
# TestJepsenRealClientSender, the real client linked into the test only).
# The runs on one group check exactly-once too
# (--exactly-once: no value stored twice within a group, the nodes'
# duplicate window covering every retry); on two groups a retry may move
# to the other group, so they do not. Before them, the broken
# broker builds (tag jepsenbroken) must each fail a jepsen run.
# make test runs a one-minute jepsen smoke run (TestJepsenSmoke) and a
# half-minute one of the POP workload (TestJepsenPop).
CHAOS_TIME    ?= 5m
CHAOS_SEED    ?= 1
CHAOS_DIR     ?= $(RUN_DIR)/chaos
CHAOS_NEMESES ?= kill pause partition oneway loss delay namesrv transfer power disk-full member hostile
CHAOS_WORKLOADS ?= queue,txn,register,pop
# KEY=VALUE words added to every node's config in every chaos run, e.g.
# CHAOS_NODE_CONF=raft.log=wal (the two-log layout; one log is the default).
CHAOS_NODE_CONF ?=

chaos: export LEDGERMQ_NODE_CONF = $(CHAOS_NODE_CONF)
chaos: build
	LEDGERMQ_CHAOS_FAULTS=30 $(GO) test -count=1 -timeout 30m -run '^TestDevChaos$$' -v ./cmd/ledgermq/
	LEDGERMQ_JEPSEN_BROKEN=1 $(GO) test -count=1 -timeout 30m -run '^TestJepsenCatchesBrokenBuilds$$' -v ./cmd/ledgermq/
	LEDGERMQ_JEPSEN_FAULTS=1 $(GO) test -count=1 -timeout 15m -run '^TestJepsenPower(AndDiskFull|Async)$$' -v ./cmd/ledgermq/
	@rm -rf $(CHAOS_DIR) && mkdir -p $(CHAOS_DIR); fail=0; \
	for n in $(CHAOS_NEMESES) partition/5; do \
	  nem=$${n%/*}; nodes=3; [ "$$n" = "$$nem" ] || nodes=$${n#*/}; d=$(CHAOS_DIR)/$$nem-$$nodes; \
	  $(BIN) jepsen run --exactly-once --nemesis $$nem --nodes $$nodes --time $(CHAOS_TIME) --seed $(CHAOS_SEED) --dir $$d > $$d.out 2>&1 || fail=1; \
	  echo "$$nem ($$nodes nodes): $$(tail -1 $$d.out)" | tee -a $(CHAOS_DIR)/verdicts.txt; \
	done; \
	d=$(CHAOS_DIR)/power-sync-3; \
	$(BIN) jepsen run --exactly-once --nemesis power --node-conf store.flush_disk_type=SYNC_FLUSH --time $(CHAOS_TIME) --seed $(CHAOS_SEED) --dir $$d > $$d.out 2>&1 || fail=1; \
	echo "power, SYNC_FLUSH (3 nodes): $$(tail -1 $$d.out)" | tee -a $(CHAOS_DIR)/verdicts.txt; \
	d=$(CHAOS_DIR)/workloads-3; \
	$(BIN) jepsen run --exactly-once --nemesis kill,partition --workload $(CHAOS_WORKLOADS) --time $(CHAOS_TIME) --seed $(CHAOS_SEED) --dir $$d > $$d.out 2>&1 || fail=1; \
	echo "kill,partition + $(CHAOS_WORKLOADS) (3 nodes): $$(grep -h '^register ' $$d.out) $$(tail -1 $$d.out)" | tee -a $(CHAOS_DIR)/verdicts.txt; \
	d=$(CHAOS_DIR)/secure-5; \
	$(BIN) jepsen run --exactly-once --nemesis all --nodes 5 --tls --acl --workload $(CHAOS_WORKLOADS) --time $(CHAOS_TIME) --seed $(CHAOS_SEED) --dir $$d > $$d.out 2>&1 || fail=1; \
	echo "all, TLS and ACL + $(CHAOS_WORKLOADS) (5 nodes): $$(grep -h '^register ' $$d.out) $$(tail -1 $$d.out)" | tee -a $(CHAOS_DIR)/verdicts.txt; \
	d=$(CHAOS_DIR)/groups-2x3; \
	$(BIN) jepsen run --groups 2 --nemesis kill,pause,partition,group-down --time $(CHAOS_TIME) --seed $(CHAOS_SEED) --dir $$d > $$d.out 2>&1 || fail=1; \
	echo "kill, pause, partition, group-down (2 groups of 3): $$(grep -h '^group-down ' $$d.out) $$(grep -h '^verdict' $$d.out | tail -1)" | tee -a $(CHAOS_DIR)/verdicts.txt; \
	d=$(CHAOS_DIR)/groups-2x3-faults; \
	$(BIN) jepsen run --groups 2 --nemesis power,disk-full,member,hostile --workload $(CHAOS_WORKLOADS) --time $(CHAOS_TIME) --seed $(CHAOS_SEED) --dir $$d > $$d.out 2>&1 || fail=1; \
	echo "power, disk-full, member, hostile + $(CHAOS_WORKLOADS) (2 groups of 3): $$(grep -h '^register ' $$d.out) $$(grep -h '^verdict' $$d.out | tail -1)" | tee -a $(CHAOS_DIR)/verdicts.txt; \
	d=$(CHAOS_DIR)/rcgo-3; \
	LEDGERMQ_JEPSEN_RCGO=1 LEDGERMQ_JEPSEN_TIME=$(CHAOS_TIME) LEDGERMQ_JEPSEN_SEED=$(CHAOS_SEED) LEDGERMQ_JEPSEN_DIR=$$d $(GO) test -count=1 -timeout 30m -run '^TestJepsenRealClientSender$$' -v ./compat/ > $$d.out 2>&1 || fail=1; \
	v=$$(grep -h '^verdict' $$d.out | tail -1); \
	echo "kill, pause, partition with rocketmq-client-go sending (3 nodes): $${v:-no verdict line, see $$d.out}" | tee -a $(CHAOS_DIR)/verdicts.txt; \
	exit $$fail

# A name server on 127.0.0.1:9876 and a 3-node broker group, each its own
# process, supervised by `ledgermq dev`; Ctrl-C stops them all.
run: build
	$(BIN) dev --dir $(RUN_DIR) --namesrv 127.0.0.1:9876 --restart

clean:
	rm -rf bin $(RUN_DIR)
