# tests/fuzz/fuzz.mk: libFuzzer targets for every parser of outside input. A target is
# tests/fuzz/fuzz_NAME.cpp (with LLVMFuzzerTestOneInput) plus seeds in tests/fuzz/corpus/NAME/
# and, if it helps, tokens in tests/fuzz/NAME.dict. `make fuzz` builds each under build-fuzz/
# with clang's -fsanitize=fuzzer,address,undefined and runs it FUZZ_SECONDS seconds.

FUZZ_OUTPUT := build-fuzz
FUZZ_SECONDS ?= 30
# -O1 to search (make fuzz); make test's second a target from the seeds builds at -O0, which
# compiles in less time than the second saves.
FUZZ_OPT ?= -O1
FUZZ_CXX ?= clang++
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CXXFLAGS := -std=c++20 $(FUZZ_OPT) -g1 -fno-omit-frame-pointer -I. $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP
FUZZ_LDLIBS := -lelf -lz -ldw -ldebuginfod -liberty -lpthread
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_OUTPUT)/fuzz_%)
# The parsers under test, every module that reads outside input, and what they call: no
# more (a target that needs another file fails to link, and names what is missing).
FUZZ_LIB_SRCS := base/fd.cpp $(addprefix elf/,debug_file.cpp demangle.cpp dwarf_file.cpp elf.cpp source_lines.cpp) \
	$(addprefix proc/,cgroup.cpp kallsyms.cpp maps.cpp perf_map.cpp process_history.cpp) \
	unwind/table.cpp unwind/cfi_image.cpp unwind/cache.cpp python/runtime.cpp python/names.cpp python/layout.cpp \
	v8/names.cpp v8/metadata.cpp proc/memory.cpp hotspot/vmstructs.cpp hotspot/layout.cpp hotspot/names.cpp \
	hotspot/scopes.cpp
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.cpp=$(FUZZ_OUTPUT)/%.o)

.PHONY: fuzz fuzz-build
# Objects stay after a link, so the next build recompiles only what changed.
.SECONDARY: $(FUZZ_LIB_OBJS) $(FUZZ_NAMES:%=$(FUZZ_OUTPUT)/tests/fuzz/fuzz_%.o)

# The standard headers, precompiled as the other builds' are (base/precompiled.h), one file
# per optimization level: clang refuses a header precompiled at another (make fuzz's -O1,
# make test's -O0).
FUZZ_PCH := $(FUZZ_OUTPUT)/precompiled$(FUZZ_OPT).h.pch
$(FUZZ_PCH): base/precompiled.h
	$(call msg,PCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -x c++-header $< -o $@

$(FUZZ_OUTPUT)/%.o: %.cpp $(FUZZ_PCH)
	$(call msg,FUZZ-CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -include-pch $(FUZZ_PCH) -c $< -o $@

$(FUZZ_OUTPUT)/fuzz_%: $(FUZZ_OUTPUT)/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJS)
	$(call msg,FUZZER,$@)
	$(Q)$(FUZZ_CXX) $(FUZZ_SAN) -fsanitize=fuzzer $^ $(FUZZ_LDLIBS) -o $@

fuzz-build: $(FUZZ_BINS)

# Each target runs from its seeds (new finds go to build-fuzz/corpus/NAME); any crash,
# leak, timeout or memory blow-up fails the run. The last line is "N passed, N failed".
fuzz: fuzz-build
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_OUTPUT=$(FUZZ_OUTPUT) scripts/fuzz.sh $(FUZZ_NAMES)

-include $(wildcard $(FUZZ_OUTPUT)/*/*.d $(FUZZ_OUTPUT)/*/*/*.d)
