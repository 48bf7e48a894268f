#!/usr/bin/env bash
# make bench: runs every Go benchmark, each figure beside its reference in
# the same run (a bare system call, libbpf's reader), shows them as they
# come, and writes them to BENCHMARKS.md with the date, machine and kernel.
# Measured figures live there, never in code comments.
#
# run.sh SECTION... runs only those sections (maps, load, kallsyms, drain,
# read, tuning, start, btf, tracing, tools, top, writes, events,
# funccount, kprobe_multi, size) and puts them in place of the same
# sections of BENCHMARKS.md (a section it does not have yet goes at its
# end), the others kept as they were, with a line saying what was
# measured again and when: the whole run takes an hour on a loaded
# machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
out=BENCHMARKS.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
only=" $* "

wanted() { # wanted NAME: no section was named, or NAME was
	[ "$only" = "  " ] || [[ $only == *" $1 "* ]]
}

section() { # section TITLE -- COMMAND...: run it, keep the benchmark lines (a VM's without its prefix)
	local title=$1
	shift 2
	printf '\n## %s\n\n`%s`\n\n```\n' "$title" "$*" >>"$tmp"
	"$@" 2>&1 | tee -a /dev/stderr | sed -E 's/^\[[a-z0-9]+ [0-9.]+\] //' | grep -E '^(Benchmark|cpu:|---)' >>"$tmp" || true
	printf '```\n' >>"$tmp"
}

wanted maps && section "Maps: bpfkit beside a bare bpf(2) (x-bare = bpfkit / bare)" -- \
	$GO test -run '^$' -bench . -benchtime 1000000x ./mapfd
wanted load && section "Program load beside a bare BPF_PROG_LOAD" -- \
	$GO test -run '^$' -bench Load -benchtime 3000x ./prog
wanted kallsyms && section "Naming 100 kernel addresses: "\
"Kallsyms's whole table beside a Symbolizer" -- \
	$GO test -run '^$' -bench Kallsyms -benchtime 20x ./prog
wanted drain && section "Perf ring: the sample loop on records in cache" -- \
	$GO test -run '^$' -bench Drain ./perfring
wanted read && section "Perf ring and BPF ring buffer readers beside libbpf's (x-libbpf = bpfkit / libbpf, medians of 7 rounds)" -- \
	$GO test -run '^$' -bench Read -benchtime 1x ./perfring -rounds 7
wanted tuning && section "Perf ring and BPF ring buffer readers: what yielding to the scheduler (perfring/yield.go) buys over a plain epoll loop (yield-x-plain = yield / plain in the same round, median of 9 rounds; GOMAXPROCS as it is, then 1)" -- \
	$GO test -run '^$' -bench Tuning -benchtime 1x -timeout 0 ./perfring -rounds 9

wanted start && section "Tools: time from exec to the first line, and peak RSS "\
"(/usr/bin/time's %M) over a run with one report, beside bpftrace (bpftool for the inspector); "\
"medians of 3 alternating rounds; targets: 20 ms and 6 MB" -- \
	$GO test -run '^$' -bench ToolStart -benchtime 1x ./tests
wanted btf && section "BTF lookup: one function's id in the kernel's BTF, mapped (6.16) and read (cpu-ns/op: the CPU time it takes; B/op: what it allocates)" -- \
	$GO test -run '^$' -bench Find -benchtime 200x ./btf

# fentry, kprobe, kprobe_multi and raw_tp on the same call: the host has
# no kprobes and refuses fentry, so in a 6.12 x86-64 VM (TCG: compare the
# ratios), which has all four.
wanted tracing && section "Tracing on the same call in a 6.12 VM: fentry, kprobe, kprobe_multi, raw_tp (ns/run from BPF_ENABLE_STATS; added-ns/call: the call's time with it less without; x-fentry, added-x-fentry: over fentry's; medians of 5 alternating rounds)" -- \
	tests/vm/run.sh -k 6.12 -- -test.run '^$' -test.bench TracingCost -test.benchtime 1x

wanted tools && section "Tools: what each tool's programs cost the kernel per event, beside bpftrace's one-liner (x-bpftrace = bpfkit / bpftrace, medians of 5 alternating rounds; BPF_ENABLE_STATS run time over run count)" -- \
	$GO test -run '^$' -bench ToolCost -benchtime 1x ./tests

wanted top && section "bpfkit top: what BPF statistics cost each run (the floor they count for a program that does nothing, and what they add to every run; medians of 5), and top's own CPU and peak RSS over 20 one-second intervals with 200 programs loaded" -- \
	$GO test -run '^$' -bench TopCost -benchtime 1x ./tests
wanted writes && section "tracex2's write sizes: the sys_enter_write perf tracepoint "\
"(returning 1) beside a raw_syscalls:sys_enter raw tracepoint, and a sampling perf event "\
"(CPU time per call of this thread, added to nothing attached; BPF runs per call and run time "\
"per run; medians of 11 alternating rounds)" -- \
	$GO test -run '^$' -bench WriteSizes -benchtime 1x ./cmd/tracex2
wanted events && section "dropmon -events: what returning 1 costs a drop, beside 0, "\
"on the counting perf event and on a sampling one (CPU time per datagram dropped on loopback; "\
"medians of 11 alternating rounds)" -- \
	$GO test -run '^$' -bench EventsReturn -benchtime 1x ./cmd/dropmon

wanted funccount && section "funccount: time to attach and to exit after SIGINT for 1, 50, 360 (sys_enter_*) and 720 (syscalls:*) syscall tracepoints, beside bpftrace's one-liner on the same (ms, medians of alternating rounds; x-bpftrace = funccount / bpftrace; bpftrace's 720 left out, about a minute to let go)" -- \
	$GO test -run '^$' -bench FunccountAttachExit -benchtime 1x ./tests

# kprobe_multi against a kprobe per function, in a VM: this kernel has no
# kprobes. The VM's lines are prefixed with its name, kept in the title.
vmbench() { # vmbench KERNEL: BenchmarkKprobeMultiVsKprobes in that x86-64 VM
	printf '\n## kprobe_multi against a kprobe per function (x86-64 %s VM, TCG): attach and detach of one program on a few hundred kernel functions (vfs_*, security_*), ms, medians of 3 rounds; x-kprobes = kprobe_multi / kprobes\n\n`tests/vm/run.sh -k %s -- -test.run ^$ -test.bench KprobeMultiVsKprobes -test.benchtime 1x`\n\n```\n' "$1" "$1" >>"$tmp"
	tests/vm/run.sh -k "$1" -- -test.run '^$' -test.bench KprobeMultiVsKprobes -test.benchtime 1x 2>&1 |
		tee -a /dev/stderr | sed -n 's/^\[amd64 [0-9.]*\] //p' | grep -E '^Benchmark' >>"$tmp" || true
	printf '```\n' >>"$tmp"
}
if wanted kprobe_multi; then
	vmbench 6.12
	vmbench 7.2
fi

# dropmon's size beside tests/bench/sizebase, a program that uses the
# standard library as dropmon's own code does (flags, signals, fmt, time
# formatting, JSON, sorting, a TCP listener) and has no BPF: the difference
# is what bpfkit costs a tool. Then dropmon built with the tag
# bpfkit_nethttp, serving -listen with net/http's server in place of the
# tools' own: the difference is what net/http would add.
if wanted size; then
	base=$(mktemp -d)
	flags=(-trimpath -ldflags='-s -w')
	CGO_ENABLED=0 $GO build "${flags[@]}" -o "$base/dropmon" ./cmd/dropmon
	CGO_ENABLED=0 $GO build "${flags[@]}" -o "$base/baseline" ./tests/bench/sizebase
	CGO_ENABLED=0 $GO build "${flags[@]}" -tags bpfkit_nethttp -o "$base/dropmon-nethttp" ./cmd/dropmon
	d=$(stat -c %s "$base/dropmon") b=$(stat -c %s "$base/baseline") n=$(stat -c %s "$base/dropmon-nethttp")
	{
		printf '\n## dropmon'"'"'s size\n\n`CGO_ENABLED=0 go build -trimpath -ldflags='"'"'-s -w'"'"'`, beside tests/bench/sizebase (the same standard library, used as dropmon uses it, and no BPF):\n\n```\n'
		printf 'dropmon   %9d bytes\nbaseline  %9d bytes\nover      %9d bytes (%s MB)\n' "$d" "$b" $((d - b)) "$(awk -v x=$((d - b)) 'BEGIN{printf "%.2f", x/1e6}')"
		printf 'dropmon with net/http serving /metrics (-tags bpfkit_nethttp): %d bytes, %d more (%s MB)\n' \
			"$n" $((n - d)) "$(awk -v x=$((n - d)) 'BEGIN{printf "%.2f", x/1e6}')"
		heavy=$($GO list -deps ./cmd/dropmon | { grep -xE 'regexp|debug/elf|debug/dwarf|internal/zstd|net/http' || true; } | tr '\n' ' ')
		printf 'regexp, debug/elf, zstd or net/http linked: %s\n' "${heavy:-none}"
		printf '```\n'
	} | tee -a /dev/stderr >>"$tmp"
	rm -rf "$base"
fi

if [ "$only" != "  " ]; then
	# Each "## " section of $tmp replaces the section of the same title;
	# one BENCHMARKS.md does not have yet goes at its end.
	awk -v new="$tmp" -v when="$(date -u '+%Y-%m-%d %H:%M UTC')" -v which="$*" '
		BEGIN {
			while ((getline line < new) > 0) {
				if (line ~ /^## /) { title = line; order[++titles] = line }
				else if (title != "") body[title] = body[title] "\n" line
			}
			for (title in body) sub(/\n+$/, "", body[title])
		}
		# The line after the blank under "Written by" keeps the history of
		# what was measured again: this run is added to it, or starts it.
		/^Written by `make bench`/ { print; print ""; getline; pending = 1; next }
		pending && /^Measured again by / {
			sub(/\.$/, "")
			print $0 ", `tests/bench/run.sh " which "` on " when "."
			pending = 0
			next
		}
		pending {
			print "Measured again by `tests/bench/run.sh " which "` on " when "."
			print ""
			pending = 0
		}
		/^## / {
			if (skip) print ""
			skip = ($0 in body)
			if (skip) { print $0 body[$0]; done[$0] = 1 } else print
			next
		}
		!skip { print }
		END {
			for (i = 1; i <= titles; i++)
				if (!(order[i] in done)) print "\n" order[i] body[order[i]]
		}
	' "$out" >"$out.new"
	mv "$out.new" "$out"
	echo "bench: replaced the sections $* of $out"
	exit 0
fi

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
