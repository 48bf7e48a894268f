#!/usr/bin/env bash
# Runs a Go test package inside VMs booted from Debian's own kernel packages.
#
#   tests/vm/run.sh [-a ARCH] [-k KERNEL]... [-p PKG] [-- GO_TEST_ARGS...]
#
# ARCH is amd64 (default; qemu-system-x86_64), arm64 (qemu-system-aarch64,
# -M virt) or arm (32-bit, Debian's armhf; qemu-system-arm -M virt): the
# kernels are Debian's for that architecture, the test binary and the tools
# are built with GOARCH=ARCH (arm: GOARM=7). KERNEL is one of 5.10 6.1 6.12
# 7.2 (default: all four; -k may repeat or take a comma list). PKG is the Go
# package whose tests run in the VM (default ./tests/, relative to the
# repository root; a directory with its own go.mod works too). GO_TEST_ARGS
# go to the test binary (e.g. -test.run TestX); -test.v is always added.
# Inside the VM the env var BPFKIT_VM=<KERNEL> is set, and
# BPFKIT_TOOLS=/tools holds the tools of cmd/, built statically.
#
# Environment:
#   BPFKIT_VM_ARCH          default for -a          (default amd64)
#   BPFKIT_VM_CACHE         kernel + apt cache      (default /var/cache/bpfkit-vm)
#   BPFKIT_VM_TIMEOUT       seconds per VM          (default 600)
#   BPFKIT_VM_BOOT_TIMEOUT  seconds until init runs (default 120)
#   BPFKIT_VM_JOBS          VMs at a time           (default: nproc; each TCG
#                           VM keeps one core busy)
#   BPFKIT_VM_ACCEL         tcg or kvm              (default: kvm only if usable)
#   BPFKIT_VM_CPU           qemu -cpu under TCG     (default max; arm64:
#                           max,pauth-impdef=on)
#   BPFKIT_VM_MIRROR / BPFKIT_VM_SECURITY_MIRROR    override the Debian mirrors
#                           (default: read from the system's apt sources)
#   BPFKIT_VM_APPEND        extra kernel parameters (e.g. loglevel=7 to see
#                           more than errors in the console log)
#   BPFKIT_VM_REFRESH=1     re-resolve the kernels and fetch newer ones (the
#                           cache is otherwise used as it is, never updated)
#   BPFKIT_VM_KEEP=1        keep the work dir (logs, initramfs) even on success
#
# Exit status: 0 only if every kernel was fetched, booted, ran the tests and
# the test binary exited 0. See tests/vm/README.md. The measured facts behind
# the choices below are in shared/VMTEST.md.
set -euo pipefail
export LC_ALL=C # $EPOCHREALTIME and awk must agree on the decimal point

ALL_KERNELS=(5.10 6.1 6.12 7.2)
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)
CACHE=${BPFKIT_VM_CACHE:-/var/cache/bpfkit-vm}
TIMEOUT=${BPFKIT_VM_TIMEOUT:-600}
ARCH=${BPFKIT_VM_ARCH:-amd64}
BOOT_TIMEOUT=${BPFKIT_VM_BOOT_TIMEOUT:-120}
JOBS=${BPFKIT_VM_JOBS:-$(nproc)}
PKG=./tests/
KERNELS=()
TEST_ARGS=()

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
	exit "${1:-0}"
}
log() { printf 'vm: %s\n' "$*"; }
die() { printf 'vm: error: %s\n' "$*" >&2; exit 1; }
now() { printf '%s' "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

# ---------------------------------------------------------------- arguments
while (($#)); do
	case $1 in
	-k) (($# >= 2)) || usage 2
		IFS=, read -ra ks <<<"$2"; KERNELS+=("${ks[@]}"); shift 2 ;;
	-k*) IFS=, read -ra ks <<<"${1#-k}"; KERNELS+=("${ks[@]}"); shift ;;
	-p) (($# >= 2)) || usage 2; PKG=$2; shift 2 ;;
	-a) (($# >= 2)) || usage 2; ARCH=$2; shift 2 ;;
	-a*) ARCH=${1#-a}; shift ;;
	-h|--help) usage 0 ;;
	--) shift; TEST_ARGS=("$@"); break ;;
	*) printf 'vm: unknown argument %q\n' "$1" >&2; usage 2 ;;
	esac
done
# What differs between the architectures, all here: qemu and its machine,
# the serial devices (console: the kernel's; OUT: the test's output, see
# init), where the kernels are cached, the CPU model under TCG. The x86
# cache paths predate -a and stay as they were.
case $ARCH in
amd64)
	QEMU=qemu-system-x86_64 QEMU_PKG=qemu-system-x86 MACHINE=() IMAGE_KIND="a bzImage"
	KCACHE=$CACHE/kernels APTDIR=$CACHE/apt
	DEB_ARCH=amd64 FLAVOUR=cloud-amd64 GOARM= SDT_CFLAGS=
	CONSOLE=ttyS0 OUT_DEV=ttyS1 BUSYBOX= TCG_CPU=max TCG_THREAD=single CC=gcc ;;
arm64)
	QEMU=qemu-system-aarch64 QEMU_PKG=qemu-system-arm MACHINE=(-M virt) IMAGE_KIND="an arm64 Image"
	KCACHE=$CACHE/kernels/arm64 APTDIR=$CACHE/apt/arm64
	DEB_ARCH=arm64 FLAVOUR=cloud-arm64 GOARM= SDT_CFLAGS=
	# -cpu max emulates pointer authentication with the architected QARMA5
	# cipher, and Debian's arm64 kernels sign every return address: several
	# times slower than pauth-impdef, qemu's cheap implementation-defined
	# cipher (figures in tests/vm/README.md). Pointer authentication stays on.
	CONSOLE=ttyAMA0 OUT_DEV=ttyS0 TCG_CPU=max,pauth-impdef=on TCG_THREAD=single
	CC=aarch64-linux-gnu-gcc ;;
arm)
	# 32-bit ARMv7 (Debian's armhf): qemu-system-arm's virt machine and
	# Debian's armmp-lpae kernels, a zImage (see tests/vm/README.md).
	QEMU=qemu-system-arm QEMU_PKG=qemu-system-arm MACHINE=(-M virt) IMAGE_KIND="an arm zImage"
	KCACHE=$CACHE/kernels/arm APTDIR=$CACHE/apt/arm
	# sdt.c in ARM code: gcc's armhf default is Thumb-2, which arm's
	# uprobes do not decode (arch_uprobe_analyze_insn).
	DEB_ARCH=armhf FLAVOUR=armmp-lpae GOARM=7 SDT_CFLAGS=-marm
	# Multi-threaded TCG: the 32-bit kernel makes its text read-only at boot
	# (mark_readonly) inside stop_machine, flushing the TLB a page at a time
	# with broadcast TLBIs, which crawl under single-threaded TCG with two
	# vCPUs: /init had not started after 120 s; one vCPU took 15 s, multi 14.
	CONSOLE=ttyAMA0 OUT_DEV=ttyS0 TCG_CPU=max TCG_THREAD=multi CC=arm-linux-gnueabihf-gcc ;;
*) die "unknown architecture '$ARCH' (known: amd64 arm64 arm)" ;;
esac
((${#KERNELS[@]})) || KERNELS=("${ALL_KERNELS[@]}")
mapfile -t KERNELS < <(printf '%s\n' "${KERNELS[@]}" | awk '!seen[$0]++')
for k in "${KERNELS[@]}"; do
	[[ " ${ALL_KERNELS[*]} " == *" $k "* ]] || die "unknown kernel '$k' (known: ${ALL_KERNELS[*]})"
done
[[ $TIMEOUT =~ ^[0-9]+$ && $BOOT_TIMEOUT =~ ^[0-9]+$ && $JOBS =~ ^[1-9][0-9]*$ ]] ||
	die "BPFKIT_VM_TIMEOUT, BPFKIT_VM_BOOT_TIMEOUT and BPFKIT_VM_JOBS must be numbers"
((BOOT_TIMEOUT <= TIMEOUT)) || BOOT_TIMEOUT=$TIMEOUT

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bpfkit-vm.XXXXXX")
KEEP_WORK=${BPFKIT_VM_KEEP:-}
VM_PIDS=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local f pid
	# Stop only what this run started: the VM watchers, then their qemu
	# processes (pid files written by run_vm).
	((${#VM_PIDS[@]} == 0)) || kill "${VM_PIDS[@]}" 2>/dev/null || true
	for f in "$WORK"/*/qemu.pid; do
		[[ -e $f ]] || continue
		pid=$(<"$f")
		kill "$pid" 2>/dev/null || true
	done
	[[ -n $KEEP_WORK ]] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------ host packages
# qemu-system-x86 or -arm (the VM), busybox-static (the VM's userland: it
# must be static, the initramfs has no libc; for arm64 and arm its applet
# list names the links, the binary comes from Debian's package for the VM's
# architecture: fetch_busybox) and cpio (to pack the initramfs).
ensure_host_packages() {
	local missing=() p
	for p in "$QEMU_PKG" busybox-static cpio; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			missing+=("$p")
	done
	((${#missing[@]})) || return 0
	((EUID == 0)) || die "missing packages ${missing[*]}: install them as root (apt-get install ${missing[*]})"
	log "installing ${missing[*]}"
	# apt-cache policy shows no candidate until the package lists were fetched.
	if apt-cache policy "${missing[@]}" 2>/dev/null | grep -q 'Candidate: (none)' ||
		! apt-cache policy "${missing[0]}" 2>/dev/null | grep -q Candidate; then
		apt-get update -qq
	fi
	local opts=(-y -qq --no-install-recommends -o DPkg::Lock::Timeout=300)
	# One retry after an update: the lists may be stale, and on this kind of
	# machine another process's apt run (docker-clean hook) can delete our
	# downloaded .debs between dpkg calls.
	DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "${missing[@]}" >"$WORK/apt-install.log" 2>&1 || {
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install "${opts[@]}" "${missing[@]}" >"$WORK/apt-install.log" 2>&1 ||
			{ tail -20 "$WORK/apt-install.log" >&2; die "apt-get install ${missing[*]} failed"; }
	}
}

# ----------------------------------------------------------- test binary
# Built once, statically (CGO_ENABLED=0): the initramfs has no libc.
build_test_binary() {
	command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
	command -v go >/dev/null || die "go not found"
	local out=$WORK/tests.test
	log "building test binary of $PKG (GOARCH=$ARCH)"
	(
		cd "$ROOT"
		export GOARCH=$ARCH GOARM=$GOARM CGO_ENABLED=0
		if [[ -d $PKG && -e $PKG/go.mod ]]; then
			# A package with its own module (e.g. a throwaway probe).
			cd "$PKG" && go test -c -o "$out" .
		else
			go test -c -o "$out" "$PKG"
		fi
	) || die "go test -c $PKG failed"
	[[ -x $out ]] || die "go test -c $PKG produced no binary (no test files?)"
	# The tools, static, for the tests that run them (BPFKIT_TOOLS in the VM).
	mkdir -p "$WORK/tools"
	(cd "$ROOT" && export GOARCH=$ARCH GOARM=$GOARM CGO_ENABLED=0 &&
		go build -trimpath -o "$WORK/tools/" ./cmd/...) || die "go build ./cmd/... failed"
	# The C program the USDT tests trace (usdt/testdata/sdt.c), static too:
	# it needs systemtap-sdt-dev and gcc with libc6-dev (amd64),
	# gcc-aarch64-linux-gnu with libc6-dev-arm64-cross (arm64) or
	# gcc-arm-linux-gnueabihf with libc6-dev-armhf-cross (arm); without them
	# those tests skip.
	# sys/sdt.h serves every architecture, but Debian installs it in the
	# host's multiarch directory only: a cross compiler looks there last.
	local sdt_h
	sdt_h=$(find /usr/include -path '*/sys/sdt.h' 2>/dev/null | head -1)
	# shellcheck disable=SC2086 # SDT_CFLAGS: words
	"$CC" -static -O2 $SDT_CFLAGS ${sdt_h:+-idirafter "${sdt_h%/sys/sdt.h}"} \
		-o "$WORK/tools/sdt" "$ROOT/usdt/testdata/sdt.c" 2>"$WORK/sdt.log" ||
		log "no static sdt program, the USDT tests will skip: $(head -1 "$WORK/sdt.log")"
	# Go runs a test with the package directory as working directory; give the
	# VM the package's testdata/ so relative paths keep working.
	PKG_DIR=$(cd "$ROOT" && if [[ -d $PKG ]]; then cd "$PKG" && pwd; fi)
}

# ------------------------------------------------------------- initramfs
# No modules are needed: serial console, initramfs, devtmpfs, tracefs,
# debugfs and bpffs are built into Debian's kernels, while virtio disks, 9p
# and network are modules. So everything goes in through the initramfs;
# each kernel's own modules (VM_MODULES) in a second archive (run_vm).
# The links to busybox's applets are those the host's busybox lists: for
# arm64 and arm the binary is Debian's build of the same package for that
# architecture (BUSYBOX, fetch_busybox), which cannot run here.
build_initramfs() {
	local stage=$WORK/initramfs bb a
	bb=$(dpkg -L busybox-static | grep -m1 '^/\(usr/\)\{0,1\}bin/busybox$') || die "busybox-static has no busybox binary?"
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,run,pkg}
	cp "${BUSYBOX:-$bb}" "$stage/bin/busybox"
	while read -r a; do
		[[ -L $stage/$a || -e $stage/$a ]] && continue
		mkdir -p "$stage/$(dirname "$a")"
		ln -s /bin/busybox "$stage/$a"
	done < <("$bb" --list-full)
	cp "$WORK/tests.test" "$stage/tests.test"
	cp -a "$WORK/tools" "$stage/tools"
	if [[ -n ${PKG_DIR:-} && -d $PKG_DIR/testdata ]]; then
		cp -a "$PKG_DIR/testdata" "$stage/pkg/testdata"
	fi
	# Test arguments, one per line, so that spaces survive. Unless told
	# otherwise, Go's own test timeout fires before the VM's, so that a hung
	# test ends with Go's goroutine dump naming it instead of a bare timeout.
	: >"$stage/args"
	if [[ " ${TEST_ARGS[*]} " != *" -test.timeout"* && " ${TEST_ARGS[*]} " != *" --test.timeout"* ]]; then
		if ((TIMEOUT > 90)); then a=$((TIMEOUT - 30)); else a=$((TIMEOUT * 2 / 3)); fi
		echo "-test.timeout=${a}s" >>"$stage/args"
	fi
	for a in "${TEST_ARGS[@]}"; do
		[[ $a != *$'\n'* ]] || die "test arguments must not contain newlines"
		printf '%s\n' "$a" >>"$stage/args"
	done
	# The only architecture-dependent line of init: the device of the test's
	# output (OUT_DEV: ttyS1 on x86, ttyS0 on a PCI UART on arm64 and arm).
	printf '#!/bin/sh\nout=/dev/%s\n' "$OUT_DEV" >"$stage/init"
	cat >>"$stage/init" <<'EOF'
# PID 1 of the test VM, written by tests/vm/run.sh.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/tmp
# devtmpfs first: /dev/console and $out only exist once it is mounted.
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t securityfs securityfs /sys/kernel/security
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up
# The modules run.sh kept for this kernel (VM_MODULES), if any.
for m in /modules/*.ko; do
	[ -e "$m" ] && insmod "$m"
done
# Kernels before 5.16 default RLIMIT_MEMLOCK to 64 KiB, and before 5.11 BPF
# maps are charged to it; a Debian system under systemd gives 8 MiB. Match that.
ulimit -l 8192 2>/dev/null
# $out carries only the test's output; raw so that no \n becomes \r\n. The
# kernel's own messages stay on its console and never interleave with it.
# (A driver may register the device a moment after init starts.)
i=0
while [ ! -e $out ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
stty -F $out raw -echo
echo BPFKIT-VM-INIT >$out
# The kernel passes unknown NAME=value parameters as env vars to init; read
# /proc/cmdline anyway in case it did not.
if [ -z "$BPFKIT_VM" ]; then
	for w in $(cat /proc/cmdline); do
		case $w in BPFKIT_VM=*) BPFKIT_VM=${w#BPFKIT_VM=} ;; esac
	done
fi
export BPFKIT_VM BPFKIT_TOOLS=/tools
set --
while IFS= read -r a; do set -- "$@" "$a"; done </args
cd /pkg
/tests.test -test.v "$@" >$out 2>&1
rc=$?
# Each redirection opens and closes the port: the last close waits until the
# UART has sent everything, so the marker is out before the power goes off.
echo "BPFKIT-VM-EXIT=$rc" >$out
poweroff -f
EOF
	chmod 755 "$stage/init"
	(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) | gzip -6 >"$WORK/initramfs.gz"
	log "initramfs $(du -k "$WORK/initramfs.gz" | cut -f1) KiB"
}

# ------------------------------------------------------------ kernel fetch
# Debian mirrors, read from the system's apt configuration (whatever format
# its sources are in): the URI serving the host's own codename, and the one
# serving <codename>-security.
find_mirrors() {
	local codename targets
	# shellcheck disable=SC1091
	codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
	# shellcheck disable=SC2016 # $(…) are apt's placeholders
	targets=$(apt-get indextargets --format '$(RELEASE) $(REPO_URI)' 2>/dev/null | sort -u || true)
	MIRROR=${BPFKIT_VM_MIRROR:-$(awk -v c="$codename" '$1 == c {print $2; exit}' <<<"$targets")}
	SECURITY_MIRROR=${BPFKIT_VM_SECURITY_MIRROR:-$(awk -v c="$codename-security" '$1 == c {print $2; exit}' <<<"$targets")}
	if [[ -z $MIRROR ]]; then
		return 1
	fi
	MIRROR=${MIRROR%/}
	# No security entry: Debian's layout puts it beside the main archive.
	[[ -n $SECURITY_MIRROR ]] || SECURITY_MIRROR=${MIRROR%/debian}/debian-security
	SECURITY_MIRROR=${SECURITY_MIRROR%/}
}

# Where each kernel comes from: "APT-GROUP META-PACKAGE" candidates, tried in
# order; the first whose kernel version starts with KERNEL wins. Exact ABI
# names (linux-image-6.1.0-56-…) change with every Debian update, so they are
# resolved from the meta packages. The cloud flavour boots fastest under
# emulation (the generic 6.1 is XZ-compressed: ~6 s more to decompress);
# armhf has none, its kernels for virt machines are armmp and armmp-lpae.
kernel_sources() {
	case $1 in
	5.10) echo "bullseye linux-image-$FLAVOUR" ;;
	6.1) echo "bookworm linux-image-$FLAVOUR" ;;
	6.12) echo "bookworm linux-image-6.12-$FLAVOUR"
		echo "trixie linux-image-$FLAVOUR" ;;
	7.2) echo "sid linux-image-$FLAVOUR" ;;
	esac
}

# sources.list lines of a private apt configuration.
group_sources() {
	case $1 in
	bullseye|bookworm|trixie)
		echo "deb $MIRROR $1 main"
		echo "deb $MIRROR $1-updates main"
		echo "deb $SECURITY_MIRROR $1-security main" ;;
	sid) echo "deb $MIRROR sid main" ;;
	esac
}

# A private apt configuration per suite group, so that suites the system does
# not carry (bullseye, sid, trixie) never touch its sources or lists.
declare -A APT_UPDATED=()
apt_opts() {
	local d=$APTDIR/$1
	APT=(-o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache"
		-o "APT::Architecture=$DEB_ARCH" -o "APT::Architectures::=$DEB_ARCH"
		-o Acquire::Languages=none
		-o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
		-o APT::Sandbox::User=root)
}
apt_update_group() {
	local g=$1 d=$APTDIR/$1 bad
	apt_opts "$g"
	[[ -n ${APT_UPDATED[$g]:-} ]] && return 0
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	group_sources "$g" >"$d/sources.list"
	log "apt-get update ($g: $(group_sources "$g" | awk '{print $3}' | paste -sd' '))"
	if ! apt-get "${APT[@]}" -qq --error-on=any update >"$d/update.log" 2>&1; then
		# A suite beside the release (-updates, -security) whose index the
		# mirror serves broken is left out, and the kernel comes from the
		# others: the mirror served armhf's bookworm-security and
		# trixie-security Packages.xz shorter than their InRelease said, and
		# none of bullseye-security.
		bad=$(sed -n 's#^E: Failed to fetch .*/dists/\([^/]*\)/.*#\1#p' "$d/update.log" | sort -u)
		if [[ -z $bad ]] || grep -qxF "$g" <<<"$bad"; then
			sed 's/^/    /' "$d/update.log" | tail -8
			return 1
		fi
		mv "$d/update.log" "$d/update-broken.log"
		log "apt: $g: left out $(paste -sd' ' <<<"$bad"), its index broken on the mirror" \
			"($d/update-broken.log)"
		group_sources "$g" | grep -vF -f <(sed 's/.*/ & main/' <<<"$bad") >"$d/sources.list"
		if ! apt-get "${APT[@]}" -qq --error-on=any update >"$d/update.log" 2>&1; then
			sed 's/^/    /' "$d/update.log" | tail -8
			return 1
		fi
	fi
	APT_UPDATED[$g]=1
}

# Versioned kernel packages reachable from META through Depends: the one
# holding vmlinuz is linux-image-<abi> (bullseye, bookworm, trixie) or, in sid,
# linux-binary-<abi> under a linux-image-<abi> meta; linux-base-<abi> (sid)
# holds the config, linux-modules-<abi> (sid) the modules.
resolve_packages() {
	local meta=$1 p dep
	local -a queue=("$meta")
	local -A seen=()
	while ((${#queue[@]})); do
		p=${queue[0]}; queue=("${queue[@]:1}")
		[[ -n ${seen[$p]:-} ]] && continue
		seen[$p]=1
		[[ $p != "$meta" ]] && echo "$p"
		while read -r dep; do
			queue+=("$dep")
		done < <(apt-cache "${APT[@]}" depends --no-recommends --no-suggests --no-conflicts \
			--no-breaks --no-replaces --no-enhances "$p" 2>/dev/null |
			awk '$1 ~ /Depends:$/ {print $2}' | grep -E '^linux-(image|binary|base|modules)-[0-9]' || true)
	done
}

pkg_field() { # PKG FIELD: the candidate's field
	apt-cache "${APT[@]}" show --no-all-versions "$1" 2>/dev/null | awk -v f="$2:" '$1 == f {print $2; exit}'
}

# Fetches vmlinuz (and config) of kernel K into $KCACHE/K unless there.
# Sets FETCH_ERR on failure.
fetch_kernel() {
	local k=$1 dst=$KCACHE/$1
	FETCH_ERR=
	# A kernel cached before modules were kept (no modules= in info) is
	# fetched again.
	if [[ -s $dst/vmlinuz ]] && grep -q '^modules=' "$dst/info" 2>/dev/null; then
		[[ -n ${BPFKIT_VM_REFRESH:-} ]] || return 0
		# Refresh: fetch again unless the same version is cached; keep the old
		# one if that fails.
		fetch_kernel_from_debian "$k" && return 0
		log "[$ARCH $k] refresh failed ($FETCH_ERR); using the cached kernel"
		FETCH_ERR=
		return 0
	fi
	fetch_kernel_from_debian "$k"
}

fetch_kernel_from_debian() {
	local k=$1 group meta mver
	local -a mvers
	FETCH_ERR=
	if [[ -z ${MIRROR:-} ]] && ! find_mirrors; then
		FETCH_ERR="no Debian mirror found in the system's apt sources (set BPFKIT_VM_MIRROR)"
		return 1
	fi
	while read -r group meta; do
		apt_update_group "$group" || { FETCH_ERR="apt-get update of $group failed"; continue; }
		# The newest version of META first; the older ones (e.g. the point
		# release's, under -security's) only if a download fails: the mirror
		# answered 404 for bullseye-security's arm64 5.10 while its index
		# listed it.
		mapfile -t mvers < <(apt-cache "${APT[@]}" madison "$meta" 2>/dev/null |
			awk -F' *[|] *' '!seen[$2]++ {print $2}')
		((${#mvers[@]})) || { FETCH_ERR="$meta not found in $group"; continue; }
		for mver in "${mvers[@]}"; do
			fetch_meta "$k" "$group" "$meta" "$mver" && return 0
			[[ $mver == "${mvers[-1]}" ]] || log "[$ARCH $k] $FETCH_ERR; trying an older $meta"
		done
	done < <(kernel_sources "$k")
	return 1
}

# Fetches kernel K from version MVER of META in GROUP; sets FETCH_ERR.
fetch_meta() {
	local k=$1 group=$2 meta=$3 mver=$4 dst=$KCACHE/$1 pkgs p ver holder stage vmlinuz config rel t0
	t0=$(now)
	mapfile -t pkgs < <(resolve_packages "$meta=$mver")
	# The vmlinuz holder is the largest linux-image/linux-binary package.
	holder=$(for p in "${pkgs[@]}"; do
		[[ $p == linux-base-* || $p == linux-modules-* ]] || echo "$(pkg_field "$p" Installed-Size) $p"
	done | sort -n | tail -1 | cut -d' ' -f2)
	[[ -n $holder ]] || { FETCH_ERR="no kernel package under $meta $mver in $group"; return 1; }
	ver=$(pkg_field "$holder" Version)
	if [[ $ver != "$k".* ]]; then
		FETCH_ERR="$meta $mver in $group is $holder $ver, not $k"
		return 1
	fi
	log "[$ARCH $k] $group: $meta $mver -> ${pkgs[*]} ($ver)"
	if [[ -s $dst/vmlinuz ]] && grep -qxF "version=$ver" "$dst/info" 2>/dev/null && grep -q '^modules=' "$dst/info"; then
		log "[$ARCH $k] cached kernel is current"
		return 0
	fi
	stage=$KCACHE/.new-$k.$$
	rm -rf "$stage"; mkdir -p "$stage/debs" "$stage/x"
	if ! (cd "$stage/debs" && apt-get "${APT[@]}" -qq download "${pkgs[@]}") >"$stage/download.log" 2>&1; then
		FETCH_ERR="apt-get download ${pkgs[*]} failed: $(grep -v '^W:' "$stage/download.log" | tail -2 | tr '\n' ' ')"
		rm -rf "$stage"; return 1
	fi
	for p in "$stage"/debs/*.deb; do dpkg-deb -x "$p" "$stage/x"; done
	# boot/vmlinuz-<rel> in linux-image-*, usr/lib/modules/<rel>/vmlinuz in sid's linux-binary-*.
	vmlinuz=$(find "$stage/x" -type f \( -name 'vmlinuz-*' -path '*/boot/*' -o -name vmlinuz -path '*/modules/*' \) | head -1)
	config=$(find "$stage/x" -type f \( -name 'config-*' -path '*/boot/*' -o -name config -path '*/modules/*' \) | head -1)
	if [[ -z $vmlinuz ]]; then
		FETCH_ERR="no vmlinuz in ${pkgs[*]}"
		rm -rf "$stage"; return 1
	fi
	rel=${vmlinuz##*/vmlinuz-}
	[[ $rel != */* ]] || rel=$(basename "$(dirname "$vmlinuz")")
	mv "$vmlinuz" "$stage/vmlinuz"
	[[ -z $config ]] || mv "$config" "$stage/config"
	keep_modules "$stage"
	printf 'release=%s\npackages=%s\nversion=%s\nsuite=%s\nmeta=%s\nmodules=%s\n' \
		"$rel" "${pkgs[*]}" "$ver" "$group" "$meta" "$(ls "$stage/modules" | paste -sd' ' -)" >"$stage/info"
	rm -rf "$stage/debs" "$stage/x" "$stage/download.log"
	rm -rf "$dst"; mv "$stage" "$dst"
	log "[$ARCH $k] cached $rel in $dst ($(du -k "$dst/vmlinuz" | cut -f1) KiB vmlinuz, $(elapsed "$t0") s)"
}

# VM_MODULES are the modules kept from each kernel's packages, loaded by
# init before the tests: tun, whose tun_chr_open runs at each open of
# /dev/net/tun, is a module function for fentry to trace (and, from 5.11,
# has BTF of its own). Debian compresses modules with xz from 6.12 on: the
# kernel could take them so only through finit_module, busybox's insmod
# uses init_module, so they are kept decompressed.
VM_MODULES=(drivers/net/tun)

# keep_modules STAGE: VM_MODULES from STAGE/x into STAGE/modules.
keep_modules() {
	local stage=$1 m f
	mkdir -p "$stage/modules"
	for m in "${VM_MODULES[@]}"; do
		f=$(find "$stage/x" -type f -path "*/kernel/$m.ko*" | head -1)
		case $f in
		'') log "no ${m##*/}.ko in the kernel's packages" ;;
		*.ko.xz) xz -dc "$f" >"$stage/modules/${m##*/}.ko" ;;
		*.ko.zst) zstd -dqc "$f" >"$stage/modules/${m##*/}.ko" ;;
		*.ko) cp "$f" "$stage/modules/${m##*/}.ko" ;;
		esac
	done
}

# arm64's and arm's userland: Debian's busybox-static for that
# architecture from the host's own suite (the same build as the host's
# busybox, whose applet list names the links), through the private apt
# configuration, extracted, never installed. Cached in $CACHE/busybox/ARCH.
# Sets BUSYBOX, or FETCH_ERR.
fetch_busybox() {
	local dst=$CACHE/busybox/$ARCH group stage
	BUSYBOX=$dst/busybox FETCH_ERR=
	[[ -s $BUSYBOX && -z ${BPFKIT_VM_REFRESH:-} ]] && return 0
	# shellcheck disable=SC1091
	group=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
	case $group in bullseye|bookworm|trixie) ;; *) group=sid ;; esac
	if [[ -z ${MIRROR:-} ]] && ! find_mirrors; then
		FETCH_ERR="no Debian mirror found in the system's apt sources (set BPFKIT_VM_MIRROR)"
		return 1
	fi
	apt_update_group "$group" || { FETCH_ERR="apt-get update of $group failed"; return 1; }
	stage=$dst.new.$$
	rm -rf "$stage"; mkdir -p "$stage/x"
	if ! (cd "$stage" && apt-get "${APT[@]}" -qq download busybox-static) >"$stage/download.log" 2>&1; then
		FETCH_ERR="apt-get download busybox-static ($ARCH, $group) failed: $(tail -2 "$stage/download.log" | tr '\n' ' ')"
		rm -rf "$stage"; return 1
	fi
	dpkg-deb -x "$stage"/busybox-static_*.deb "$stage/x"
	if [[ ! -s $stage/x/bin/busybox ]]; then
		FETCH_ERR="no bin/busybox in $(basename "$stage"/busybox-static_*.deb)"
		rm -rf "$stage"; return 1
	fi
	mkdir -p "$dst"
	mv "$stage/x/bin/busybox" "$BUSYBOX"
	dpkg-deb -f "$stage"/busybox-static_*.deb Package Version Architecture | awk '{print $2}' | paste -sd' ' >"$dst/info"
	rm -rf "$stage"
	log "cached busybox of $(<"$dst/info") in $dst"
}

# ------------------------------------------------------------------ boot
# Under PVM (/sys/module/kvm_pvm) /dev/kvm cannot run stock kernels: 6.1
# hangs in the decompressor and 6.12 dies with a KVM emulation failure. TCG
# stays single-threaded on x86 and arm64: multi-threaded TCG is ~20% faster
# but oopsed while patching x86 kernel text, which kprobes do all the time
# (arm's 32-bit kernel needs it, and patches its text in stop_machine).
choose_accel() {
	local host=amd64
	[[ $(uname -m) != aarch64 ]] || host=arm64
	case ${BPFKIT_VM_ACCEL:-} in
	tcg) ACCEL=(-accel "tcg,thread=$TCG_THREAD" -cpu "${BPFKIT_VM_CPU:-$TCG_CPU}") ;;
	kvm) ACCEL=(-accel kvm -cpu host) ;;
	'') if [[ $host == "$ARCH" && -w /dev/kvm && ! -e /sys/module/kvm_pvm ]]; then
			ACCEL=(-accel kvm -cpu host)
		else
			ACCEL=(-accel "tcg,thread=$TCG_THREAD" -cpu "${BPFKIT_VM_CPU:-$TCG_CPU}")
		fi ;;
	*) die "BPFKIT_VM_ACCEL must be tcg or kvm" ;;
	esac
}

# Whether F is a kernel qemu can boot with -kernel: a bzImage has "HdrS" at
# 0x202; an arm64 Image, which Debian's arm64 vmlinuz is (not compressed),
# has "ARM\x64" at 0x38; an arm zImage (self-decompressing) has the magic
# 0x016f2818 at 0x24, little-endian.
image_ok() {
	local f=$1
	case $ARCH in
	amd64) [[ $(dd if="$f" bs=1 skip=514 count=4 2>/dev/null) == HdrS ]] ;;
	arm64) [[ $(hex_at "$f" 56) == 41524d64 ]] ;;
	arm) [[ $(hex_at "$f" 36) == 18286f01 ]] ;;
	esac
}
# hex_at FILE OFFSET prints the 4 bytes at OFFSET in hex.
hex_at() { dd if="$1" bs=1 skip="$2" count=4 2>/dev/null | od -An -tx1 | tr -d ' \n'; }

# Boots kernel K, waits for it, writes $WORK/K/{status,output,console.log}.
# Always returns 0: the outcome is in the status file.
run_vm() {
	local k=$1 d=$WORK/$1 t0 qpid reason='' rc='' qrc=0 t out initrd
	mkdir -p "$d"
	: >"$d/output.clean"
	t0=$(now)
	# A truncated download or a wrong file would only make qemu fail obscurely.
	if ! image_ok "$KCACHE/$k/vmlinuz"; then
		printf 'rc=\nreason=%s\ntime=0.0\n' "$KCACHE/$k/vmlinuz is not $IMAGE_KIND (delete it to fetch again)" >"$d/status"
		print_vm "$k"
		return 0
	fi
	: >"$d/console.log"; : >"$d/output.log"
	# This kernel's modules, appended to the initramfs as a second archive
	# (the kernel unpacks each in turn).
	initrd=$WORK/initramfs.gz
	if compgen -G "$KCACHE/$k/modules/*.ko" >/dev/null; then
		initrd=$d/initrd.gz
		(cd "$KCACHE/$k" && find modules -print0 | LC_ALL=C sort -z |
			cpio --null -o -H newc --owner=0:0 --quiet) | gzip -6 | cat "$WORK/initramfs.gz" - >"$initrd"
	fi
	# The second serial port on x86. The virt machine (arm64, arm) has only
	# one UART (PL011, the console): the output goes to a PCI 16550 (qemu's
	# pci-serial), which the kernel's built-in 8250_pci driver makes ttyS0.
	case $ARCH in
	amd64) out=(-serial "file:$d/output.log") ;;
	arm64|arm) out=(-chardev "file,id=out,path=$d/output.log" -device pci-serial,chardev=out) ;;
	esac
	# $CONSOLE: kernel console, to a log that is only shown on failure.
	# $OUT_DEV: the test's output (see init).
	"$QEMU" "${MACHINE[@]}" "${ACCEL[@]}" -m 1G -smp 2 -nodefaults -no-user-config \
		-display none -no-reboot -nic none \
		-kernel "$KCACHE/$k/vmlinuz" -initrd "$initrd" \
		-append "console=$CONSOLE panic=-1 quiet BPFKIT_VM=$k ${BPFKIT_VM_APPEND:-}" \
		-serial "file:$d/console.log" "${out[@]}" \
		</dev/null >"$d/qemu.log" 2>&1 &
	qpid=$!
	echo "$qpid" >"$d/qemu.pid"
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 0.5
		t=$(elapsed "$t0"); t=${t%.*}
		if grep -q 'BPFKIT-VM-EXIT=' "$d/output.log"; then
			# Done; give poweroff a moment before forcing it.
			for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
			break
		elif ((t >= TIMEOUT)); then
			reason="timed out after ${TIMEOUT}s (BPFKIT_VM_TIMEOUT)"; break
		elif ((t >= BOOT_TIMEOUT)) && ! grep -q '^BPFKIT-VM-INIT' "$d/output.log"; then
			reason="init did not start within ${BOOT_TIMEOUT}s (BPFKIT_VM_BOOT_TIMEOUT)"; break
		elif grep -q 'System halted' "$d/console.log"; then
			# The boot decompressor halts forever on a bad image.
			reason="kernel decompressor halted"; break
		fi
	done
	kill "$qpid" 2>/dev/null || true
	wait "$qpid" || qrc=$?
	rm -f "$d/qemu.pid"
	tr -d '\r' <"$d/output.log" >"$d/output.clean"
	# The marker may follow a test's unterminated last line: match it anywhere.
	rc=$(sed -n 's/.*BPFKIT-VM-EXIT=\([0-9]*\).*/\1/p' "$d/output.clean" | tail -1)
	if [[ -z $rc && -z $reason ]]; then
		if grep -q 'Kernel panic' "$d/console.log"; then
			reason="kernel panic"
		elif grep -q '^BPFKIT-VM-INIT' "$d/output.clean"; then
			reason="VM stopped (qemu exit $qrc) before the tests finished"
		else
			# -no-reboot turns a reset (triple fault in a bad image) into an exit.
			reason="VM stopped (qemu exit $qrc) before init ran: kernel reset, crashed or is not bootable"
		fi
	fi
	printf 'rc=%s\nreason=%s\ntime=%s\n' "$rc" "$reason" "$(elapsed "$t0")" >"$d/status"
	print_vm "$k"
	return 0
}

count() { local n; n=$(grep -cE "^[[:space:]]*--- $1" "$2" 2>/dev/null) || true; echo "${n:-0}"; }

# Prints one kernel's output as a block, prefixed, under a lock so that two
# VMs ending together do not interleave.
print_vm() {
	local k=$1 d=$WORK/$1 rc reason time rel
	rc=$(sed -n 's/^rc=//p' "$d/status"); reason=$(sed -n 's/^reason=//p' "$d/status")
	time=$(sed -n 's/^time=//p' "$d/status")
	rel=$(sed -n 's/^release=//p' "$KCACHE/$k/info" 2>/dev/null || true)
	{
		flock 9
		echo "==== [$ARCH $k] $rel: ${time}s"
		sed -e '/^BPFKIT-VM-\(INIT\|EXIT=[0-9]*\)$/d' -e 's/BPFKIT-VM-EXIT=[0-9]*$//' \
			"$d/output.clean" 2>/dev/null | sed "s/^/[$ARCH $k] /" || true
		if [[ -n $reason ]]; then
			if [[ ! -e $d/console.log ]]; then
				echo "[$ARCH $k] FAILED: $reason"
			elif [[ -s $d/console.log ]]; then
				echo "[$ARCH $k] FAILED: $reason; last lines of the kernel console ($d/console.log):"
				tail -25 "$d/console.log" | tr -d '\r' | sed "s/^/[$ARCH $k]   | /"
			elif ! grep -q '^BPFKIT-VM-INIT' "$d/output.clean"; then
				echo "[$ARCH $k] FAILED: $reason; the kernel console is empty ('quiet' shows only errors; BPFKIT_VM_APPEND=loglevel=7 shows more)"
			else
				echo "[$ARCH $k] FAILED: $reason (kernel console empty)"
			fi
			# (qemu's own "terminating on signal" after a timeout is noise)
			if grep -qv 'terminating on signal' "$d/qemu.log" 2>/dev/null; then
				echo "[$ARCH $k] qemu said:"
				grep -v 'terminating on signal' "$d/qemu.log" | sed "s/^/[$ARCH $k]   | /"
			fi
		elif [[ $rc != 0 ]]; then
			echo "[$ARCH $k] FAILED: test binary exited $rc"
		else
			echo "[$ARCH $k] ok"
		fi
	} 9>"$WORK/print.lock"
}

# ------------------------------------------------------------------ main
main() {
	local k t0 running=0 failed=0 ok_kernels=() rc reason time p f s result tp=0 tf=0 ts=0
	local -A fetch_err=() fetch_time=()
	t0=$(now)
	ensure_host_packages
	build_test_binary
	choose_accel

	mkdir -p "$KCACHE" "$APTDIR"
	# One fetcher at a time per cache (another run may share it).
	exec 8>"$CACHE/.lock"
	flock 8
	if [[ $ARCH != amd64 ]] && ! fetch_busybox; then
		die "busybox for $ARCH: $FETCH_ERR"
	fi
	for k in "${KERNELS[@]}"; do
		local tk; tk=$(now)
		if fetch_kernel "$k"; then
			ok_kernels+=("$k")
		else
			fetch_err[$k]=$FETCH_ERR
			printf 'vm: [%s %s] FAILED to fetch: %s\n' "$ARCH" "$k" "$FETCH_ERR"
		fi
		fetch_time[$k]=$(elapsed "$tk")
	done
	flock -u 8
	build_initramfs

	log "booting $ARCH ${ok_kernels[*]:-nothing} (${ACCEL[*]}, $JOBS at a time, timeout ${TIMEOUT}s)"
	# Each TCG VM keeps one host core busy: run JOBS (2) at a time.
	for k in "${ok_kernels[@]}"; do
		while ((running >= JOBS)); do wait -n || true; running=$((running - 1)); done
		run_vm "$k" &
		VM_PIDS+=($!)
		running=$((running + 1))
	done
	wait || true
	VM_PIDS=()

	echo
	printf '%-5s %-6s %-28s %5s %5s %5s %7s %7s  %s\n' arch kernel release pass fail skip fetch boot result
	for k in "${KERNELS[@]}"; do
		local rel='' out=/dev/null
		rel=$(sed -n 's/^release=//p' "$KCACHE/$k/info" 2>/dev/null || true)
		if [[ -n ${fetch_err[$k]:-} ]]; then
			result="FAILED: fetch: ${fetch_err[$k]}"; time=-
		elif [[ ! -e $WORK/$k/status ]]; then
			result="FAILED: harness error (no status for this VM)"; time=-
		else
			rc=$(sed -n 's/^rc=//p' "$WORK/$k/status"); reason=$(sed -n 's/^reason=//p' "$WORK/$k/status")
			time=$(sed -n 's/^time=//p' "$WORK/$k/status")s
			out=$WORK/$k/output.clean
			if [[ -n $reason ]]; then result="FAILED: $reason"
			elif [[ $rc != 0 ]]; then result="FAILED: tests (exit $rc)"
			else result=PASS; fi
		fi
		p=$(count PASS "$out"); f=$(count FAIL "$out"); s=$(count SKIP "$out")
		tp=$((tp + p)); tf=$((tf + f)); ts=$((ts + s))
		if [[ $result != PASS ]]; then
			failed=$((failed + 1))
			# A kernel that failed without a failing test still counts once.
			((f)) || tf=$((tf + 1))
		fi
		printf '%-5s %-6s %-28s %5s %5s %5s %6ss %7s  %s\n' "$ARCH" "$k" "${rel:--}" "$p" "$f" "$s" "${fetch_time[$k]}" "$time" "$result"
	done
	echo "total $(elapsed "$t0")s"
	((failed == 0)) || KEEP_WORK=1
	[[ -z $KEEP_WORK ]] || echo "logs (console.log, output.log per kernel) and initramfs kept in $WORK"
	# A plain closing line that CI understands.
	echo "vm: $ARCH: $tp passed, $tf failed, $ts skipped"
	((failed == 0))
}

# On one line, so that bash has read the whole script before running it: an
# edit of this file during a run (e.g. a checkout) cannot change what runs.
{ main; exit; }
