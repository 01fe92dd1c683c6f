#!/bin/sh
# scripts/install-deps.sh: installs the Debian packages the build and the tests need,
# only those missing. Works as root, or as a user with sudo.
set -e

# Build: clang compiles the BPF side, bpftool makes vmlinux.h and the skeleton.
BUILD="make g++ clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libdw-dev doctest-dev"
# Tests and benchmarks: xmllint and chromium check the flame graph, go reads pprof back,
# perf and bpftrace are the peers the benchmarks compare against, binutils for objcopy/strip.
# libclang-rt-14-dev holds libFuzzer and the sanitizer runtimes clang links the fuzz targets with.
# libc6-dbg puts libc's debug file under /usr/lib/debug/.build-id/, which names libc's
# internal functions (__libc_start_call_main) as perf names them.
TEST="binutils libxml2-utils chromium golang-go linux-perf bpftrace procps libclang-rt-14-dev libc6-dbg"

if [ "$(id -u)" = 0 ]; then
	AS_ROOT=""
elif command -v sudo >/dev/null 2>&1; then
	AS_ROOT="sudo"
else
	echo "install-deps: needs root or sudo to install packages" >&2
	exit 1
fi

missing=""
for package in $BUILD $TEST; do
	dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $package"
done
if [ -z "$missing" ]; then
	echo "install-deps: everything is installed"
	exit 0
fi
echo "install-deps: installing$missing"
$AS_ROOT apt-get update -qq
$AS_ROOT env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
