#!/bin/sh
# scripts/install-deps.sh: installs the Debian packages that are missing, and only those:
# what builds and runs ./profile, and with --test also what the tests need. The one place
# that lists packages. Works as root, or as a user with sudo.
# Usage: scripts/install-deps.sh [--test] [--list]   (--list: print the packages, install nothing)
set -e

# BUILD: what `make` needs to build ./profile and what it needs to run. clang compiles the
# BPF side, bpftool makes vmlinux.h and the skeleton, libiberty demangles C++ and Rust names,
# libcurl speaks HTTP and TLS to the servers --push sends windows to, libdebuginfod fetches
# the debug files of stripped binaries from the servers DEBUGINFOD_URLS names.
BUILD="make g++ clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libdw-dev libiberty-dev libcurl4-openssl-dev libdebuginfod-dev"

# TEST: what `make test` needs on top of BUILD. Add a test's packages here, each with why.
#   doctest-dev          the test framework
#   binutils             nm, readelf, objcopy, strip: the fixtures and what they are checked against
#   procps               pgrep, for scripts/soak.sh
#   libxml2-utils        xmllint checks the flame graph's SVG
#   chromium             renders the flame graph and runs its script
#   golang-go            go tool pprof reads the pprof output back
#   linux-perf bpftrace  the peers `make bench` and scripts/named-frames.sh compare against
#   libclang-rt-14-dev   libFuzzer and the sanitizer runtimes clang links the fuzz targets with
#   libc6-dbg            libc's debug file under /usr/lib/debug/.build-id/, which names libc's
#                        internal functions (__libc_start_call_main) as perf names them
#   rustc                builds the Rust fixtures whose names the demangler is tested on
#   python3              Debian's own interpreter (/usr/bin/python3.11), unwound without frame
#                        pointers (tests/test_unwind), and its Python frames (tests/test_python)
#   openjdk-17-jdk-headless  Debian's JDK: java runs tests/workloads/java's classes, which javac
#                        compiles, and its JVM's Java frames are walked (tests/test_hotspot)
#   groff-base man-db    groff, nroff and man render profile(8) and must not warn (tests/test_install)
#   systemd              systemd-analyze verify checks the installed profile-agent.service
#   debuginfod           the server tests/test_debuginfod.cpp and scripts/bench-debuginfod.sh
#                        fetch debug files from, on loopback
#   openssl              makes the CA and the server and client certificates of the HTTPS
#                        receiver that --push's TLS and credentials are tested against
#   protobuf-compiler    protoc --decode_raw reads the OTLP requests without their schema
TEST="doctest-dev binutils procps libxml2-utils chromium golang-go linux-perf bpftrace libclang-rt-14-dev libc6-dbg rustc python3 openjdk-17-jdk-headless groff-base man-db systemd openssl debuginfod protobuf-compiler"

packages=$BUILD
what="build"
list=""
for option in "$@"; do
	case "$option" in
	--test) packages="$BUILD $TEST" what="build and test" ;;
	--list) list=1 ;;
	*)
		echo "usage: $0 [--test] [--list]" >&2
		exit 2
		;;
	esac
done
if [ -n "$list" ]; then
	printf '%s\n' $packages
	exit 0
fi

missing=""
for package in $packages; do
	dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $package"
done
# node and npm: the Parca schema test decodes profile's WriteRaw requests with npm's
# @parca/client (installed by `make check` under build/npm), which needs Node 20.6 or later.
# Asked for by command, not package: a machine's own Node (NodeSource's nodejs, which
# carries npm) must not be replaced by Debian's.
if [ "$packages" != "$BUILD" ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
	missing="$missing nodejs npm"
fi
if [ -z "$missing" ]; then
	echo "install-deps: every $what package is installed"
	exit 0
fi

if [ "$(id -u)" = 0 ]; then
	AS_ROOT=""
elif command -v sudo >/dev/null 2>&1; then
	AS_ROOT="sudo"
else
	echo "install-deps: these $what packages are missing:$missing; installing them needs root or sudo" >&2
	exit 1
fi
echo "install-deps: installing$missing${AS_ROOT:+ (through sudo)}"
$AS_ROOT apt-get update -qq
$AS_ROOT env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
