#!/usr/bin/env bash
# make bench: runs every Go benchmark, each figure beside its reference in
# the same run (a bare system call, libbpf's reader), shows them as they
# come, and writes them to BENCHMARKS.md with the date, machine and kernel.
# Measured figures live there, never in code comments.
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
out=BENCHMARKS.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

section() { # section TITLE -- COMMAND...: run it, keep the benchmark lines
	local title=$1
	shift 2
	printf '\n## %s\n\n`%s`\n\n```\n' "$title" "$*" >>"$tmp"
	"$@" 2>&1 | tee -a /dev/stderr | grep -E '^(Benchmark|cpu:|---)' >>"$tmp" || true
	printf '```\n' >>"$tmp"
}

section "Maps: bpfkit beside a bare bpf(2) (x-bare = bpfkit / bare)" -- \
	$GO test -run '^$' -bench . -benchtime 1000000x ./mapfd
section "Program load beside a bare BPF_PROG_LOAD" -- \
	$GO test -run '^$' -bench Load -benchtime 3000x ./prog
section "Naming 100 kernel addresses: Kallsyms's whole table beside a Symbolizer" -- \
	$GO test -run '^$' -bench Kallsyms -benchtime 20x ./prog
section "Perf ring: the sample loop on records in cache" -- \
	$GO test -run '^$' -bench Drain ./perfring
section "Perf ring and BPF ring buffer readers beside libbpf's (x-libbpf = bpfkit / libbpf, medians of 7 rounds)" -- \
	$GO test -run '^$' -bench Read -benchtime 1x ./perfring -rounds 7

section "Tools: time from exec to the first line, and peak RSS (/usr/bin/time's %M) over a run with one report, beside bpftrace (bpftool for the inspector); medians of 3 alternating rounds; targets: 20 ms and 6 MB" -- \
	$GO test -run '^$' -bench ToolStart -benchtime 1x ./tests
section "Tools: what each tool's programs cost the kernel per event, beside bpftrace's one-liner (x-bpftrace = bpfkit / bpftrace, medians of 5 alternating rounds; BPF_ENABLE_STATS run time over run count)" -- \
	$GO test -run '^$' -bench ToolCost -benchtime 1x ./tests

# dropmon's size beside tests/bench/sizebase, a program that uses the
# standard library as dropmon's own code does (flags, signals, fmt, time
# formatting, JSON, sorting, a TCP listener) and has no BPF: the difference
# is what bpfkit costs a tool.
base=$(mktemp -d)
flags=(-trimpath -ldflags='-s -w')
CGO_ENABLED=0 $GO build "${flags[@]}" -o "$base/dropmon" ./cmd/dropmon
CGO_ENABLED=0 $GO build "${flags[@]}" -o "$base/baseline" ./tests/bench/sizebase
d=$(stat -c %s "$base/dropmon") b=$(stat -c %s "$base/baseline")
{
	printf '\n## dropmon'"'"'s size\n\n`CGO_ENABLED=0 go build -trimpath -ldflags='"'"'-s -w'"'"'`, beside tests/bench/sizebase (the same standard library, used as dropmon uses it, and no BPF):\n\n```\n'
	printf 'dropmon   %9d bytes\nbaseline  %9d bytes\nover      %9d bytes (%s MB)\n' "$d" "$b" $((d - b)) "$(awk -v x=$((d - b)) 'BEGIN{printf "%.2f", x/1e6}')"
	heavy=$($GO list -deps ./cmd/dropmon | { grep -xE 'regexp|debug/elf|debug/dwarf|internal/zstd|net/http' || true; } | tr '\n' ' ')
	printf 'regexp, debug/elf, zstd or net/http linked: %s\n' "${heavy:-none}"
	printf '```\n'
} | tee -a /dev/stderr >>"$tmp"
rm -rf "$base"

{
	echo "# Benchmarks"
	echo
	echo "Written by \`make bench\` on $(date -u '+%Y-%m-%d %H:%M UTC'); do not edit by hand."
	echo
	echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "- kernel: $(uname -r)"
	echo "- go: $($GO env GOVERSION)"
	echo
	echo "Each figure stands beside its reference measured in the same run; on a"
	echo "shared machine, compare the ratios, not the absolute times."
	cat "$tmp"
} >"$out"
echo "bench: wrote $out"
