# bpfkit: every target runs as root on a Debian machine with Go installed.
# Go is looked for on PATH, then in /usr/local/go/bin.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go

.PHONY: all build tools dropmon example deps check test test-host test-race test-386 test-vm bench fuzz lint

all: build test

build:
	$(GO) build ./...

# tools: every command of cmd/ as a static binary in bin/.
tools:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -o bin/ ./cmd/...

# dropmon: count the packets the kernel drops, by reason and location, every
# second until Ctrl-C. DROPMON_FLAGS passes flags and arguments ("-top 20 5",
# "-stacks", "-events"). The tool runs as a built binary, not under go run:
# on Ctrl-C it prints what it counted and exits 0, and make stays quiet.
dropmon:
	@$(GO) build -o bin/dropmon ./cmd/dropmon
	bin/dropmon $(DROPMON_FLAGS)

# The example: build a program with the DSL, load it, test-run it, print
# the results and the journal of bpf() calls.
example:
	$(GO) run ./cmd/example

# Every test, as root: make check first, then the kernel tests on this
# machine (tests needing a feature this kernel lacks, kprobes say, skip
# and say so), the unsafe packages' tests again under the race detector,
# the 32-bit tests, then the integration tests and perfring's in VMs
# booted from Debian's 5.10, 6.1, 6.12 and 7.2 kernels, which have
# kprobes, for x86-64, arm64 (built with GOARCH=arm64) and 32-bit arm
# (armhf, GOARCH=arm GOARM=7), under qemu's emulation; armhf's take about
# as long as x86-64's. test-vm installs qemu-system-x86, qemu-system-arm,
# busybox-static and cpio if missing and caches the kernels outside the
# repository (/var/cache/bpfkit-vm); see tests/vm/README.md.
test: check deps test-host test-race test-386 test-vm

# The quick check anyone can run, in under a minute once Go's caches are
# warm, without root and without Debian's packages: make lint (gofmt, go
# vet on five ports), staticcheck, and the tests that need no root, the
# fuzz targets' seeds among them. go test -short skips the tests that need
# root, root or not, and the few that take long (a tool's build, the
# comparison of the kernel's BTF with bpftool's). staticcheck comes from
# the Go module proxy at a pinned version, the first for Go 1.26: go run
# fetches and caches it, and go.mod keeps golang.org/x/sys alone.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
check: lint
	$(GO) run $(STATICCHECK) ./...
	$(GO) test -short ./...

# What the tests need beyond Go, from Debian's packages, installed if
# missing: bpftool (the inspector's tests compare with it), gcc, libc6-dev,
# systemtap-sdt-dev, gcc-aarch64-linux-gnu and libc6-dev-arm64-cross,
# gcc-arm-linux-gnueabihf and libc6-dev-armhf-cross (the USDT test
# programs, for amd64, i386, arm64 and armhf), binutils (readelf), python3
# (a real program's USDT probes), prometheus (promtool checks the tools'
# /metrics, and its server scrapes them; the package's service is not
# started here, the tests run their own server on a free port), tmux (a
# terminal of known size, in which bpfkit top's screen is read back).
TEST_PACKAGES := bpftool gcc libc6-dev systemtap-sdt-dev binutils python3 \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-arm-linux-gnueabihf libc6-dev-armhf-cross \
	prometheus tmux
deps:
	@missing=$$(for p in $(TEST_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	[ -z "$$missing" ] || { echo "installing" $$missing; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 $$missing >/dev/null; }

test-host:
	@[ "$$(id -u)" = 0 ] || { echo "make test needs root: the tests load BPF programs"; exit 1; }
	$(GO) test -count=1 ./...

# The library's packages that hold unsafe code, built with the race
# detector, which also turns on checkptr: a pointer or slice that strays
# outside its allocation (the journal once read 256 bytes of a 4-byte
# string) fails the test instead of reading unrelated memory unseen.
RACE_PACKAGES := ./sys ./mapfd ./perfring ./prog ./usdt ./btf
test-race:
	@[ "$$(id -u)" = 0 ] || { echo "make test needs root: the tests load BPF programs"; exit 1; }
	$(GO) test -race -count=1 $(RACE_PACKAGES)

# 32-bit: the library's tests built for 386 and run on this 64-bit kernel,
# which takes their system calls through its compat layer: attrs, pointers
# and 64-bit atomics as a 32-bit program lays them out.
test-386:
	@for p in sys insn mapfd prog tracefs perfring btf; do \
	  echo "GOARCH=386 $$p"; \
	  GOARCH=386 CGO_ENABLED=0 $(GO) test -c -o bin/386/$$p.test ./$$p && (cd $$p && ../bin/386/$$p.test) || exit 1; \
	done

test-vm:
	tests/vm/run.sh
	tests/vm/run.sh -p ./perfring/
	tests/vm/run.sh -a arm64
	tests/vm/run.sh -a arm64 -p ./perfring/
	tests/vm/run.sh -a arm
	tests/vm/run.sh -a arm -p ./perfring/

# Benchmarks, each beside its reference in the same run: maps and loads
# beside a bare system call ("x-bare" is bpfkit's time over the bare
# call's), the perf and ring buffer readers beside libbpf's (built from
# perfring/testdata with gcc and Debian's libbpf-dev, installed if missing),
# the tools' programs beside bpftrace's one-liners (Debian's bpftrace), and
# dropmon's size beside a binary with the same standard imports.
# tests/bench/run.sh writes the figures to BENCHMARKS.md.
bench:
	@command -v gcc >/dev/null && [ -e /usr/include/bpf/libbpf.h ] || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc libc6-dev libbpf-dev >/dev/null; } || \
	  echo "bench: no gcc or libbpf-dev: the perf reader runs without libbpf beside it"
	@command -v bpftrace >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends bpftrace >/dev/null; } || \
	  echo "bench: no bpftrace: the tools' costs are measured without it beside them"
	GO=$(GO) tests/bench/run.sh

# A short run of every fuzz target.
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# gofmt, and vet on this machine's port and four others: 32-bit words, and
# arm64, which has no epoll_wait. arm is vetted as armhf builds it (GOARM=7,
# Go's default for a cross build, written out so that no GOARM in the
# environment changes what is checked); GOARM means nothing to the others.
# The library's packages: their code (not their tests) keeps its lines
# within 100 characters, a tab counted as one (as the lll linter counts).
LIBRARY_DIRS := sys insn mapfd prog tracefs perfring usdt btf
lint:
	@out=$$(gofmt -l .); \
	  [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet ./...
	@for arch in arm64 arm 386 riscv64; do \
	  echo "GOARCH=$$arch go vet ./..."; GOARCH=$$arch GOARM=7 $(GO) vet ./... || exit 1; \
	done
	@long=$$(ls $(LIBRARY_DIRS:%=%/*.go) | grep -v '_test\.go$$' | xargs awk 'length > 100 {print FILENAME ":" FNR}'); \
	  [ -z "$$long" ] || { echo "library lines over 100 characters (a tab counts as one):"; echo "$$long"; exit 1; }
