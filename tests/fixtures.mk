# tests/fixtures.mk: the ELF files and text fixtures the unit tests read, built here.
# Beside each program: X.nm (its symbols as nm sees them), X.buildid (readelf -n's build
# id) and X.loads (its PT_LOAD segments: offset, address, file size), the answers the
# tests check the project's own ELF reader against.

FIXTURE_DIR := $(PLAIN)/fixtures
FIXTURE_CFLAGS := -O1 -g -fno-omit-frame-pointer -Wl,--build-id
FIXTURE_PROGRAMS := $(addprefix $(FIXTURE_DIR)/,hello-nopie hello-pie hello-stripped libfixture.so uses-lib cxx)
FIXTURES := $(FIXTURE_PROGRAMS) $(FIXTURE_PROGRAMS:%=%.nm) $(FIXTURE_PROGRAMS:%=%.buildid) \
	$(FIXTURE_PROGRAMS:%=%.loads) $(FIXTURE_DIR)/cxx.demangled

$(FIXTURE_DIR):
	$(Q)mkdir -p $@

$(FIXTURE_DIR)/hello-nopie: tests/fixtures/hello.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fno-pie -no-pie $< -o $@

$(FIXTURE_DIR)/hello-pie: tests/fixtures/hello.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie $< -o $@

# strip --strip-all drops .symtab but keeps .dynsym, where -rdynamic put the functions.
$(FIXTURE_DIR)/hello-stripped: tests/fixtures/hello.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie -rdynamic $< -o $@
	$(Q)strip --strip-all $@

$(FIXTURE_DIR)/libfixture.so: tests/fixtures/fixture_lib.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -shared -fPIC -Wl,-Ttext-segment=0x200000 $< -o $@

$(FIXTURE_DIR)/uses-lib: tests/fixtures/uses_lib.c $(FIXTURE_DIR)/libfixture.so
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie $< -L$(FIXTURE_DIR) -lfixture -Wl,-rpath,'$$ORIGIN' -o $@

$(FIXTURE_DIR)/cxx: tests/fixtures/cxx.cpp | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CXX) $(FIXTURE_CFLAGS) -fPIE -pie $< -o $@

$(FIXTURE_DIR)/%.nm: $(FIXTURE_DIR)/%
	$(Q)nm --defined-only $< > $@

# Stripped: only the dynamic symbols are left to list.
$(FIXTURE_DIR)/hello-stripped.nm: $(FIXTURE_DIR)/hello-stripped
	$(Q)nm -D --defined-only $< > $@

$(FIXTURE_DIR)/cxx.demangled: $(FIXTURE_DIR)/cxx
	$(Q)nm -C --defined-only $< > $@

$(FIXTURE_DIR)/%.buildid: $(FIXTURE_DIR)/%
	$(Q)readelf -n $< | awk '/Build ID:/ { print $$3 }' > $@

$(FIXTURE_DIR)/%.loads: $(FIXTURE_DIR)/%
	$(Q)readelf -lW $< | awk '$$1 == "LOAD" { print $$2, $$3, $$5 }' > $@

fixtures: $(FIXTURES)

# Source lines (elf/source_lines): inlined.cpp at -O2 with GCC's default DWARF 5, with
# DWARF 4, with compressed debug sections, with its DWARF moved to a separate
# inlined-split.debug the way distributions ship it, and from clang (DWARF 5 through
# .debug_str_offsets and .debug_addr, and no .debug_aranges). The tests read the
# expected lines from the copies of the sources beside them.
SOURCE_LINE_PROGRAMS := $(addprefix $(FIXTURE_DIR)/,inlined inlined-dwarf4 inlined-gz inlined-split inlined-clang)
SOURCE_LINE_CXXFLAGS := -O2 -g -Wl,--build-id -fPIE -pie
SOURCE_LINE_CLANGXX ?= clang++

$(FIXTURE_DIR)/inlined: tests/fixtures/inlined.cpp tests/fixtures/inlined.h | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CXX) $(SOURCE_LINE_CXXFLAGS) $< -o $@

$(FIXTURE_DIR)/inlined-dwarf4: tests/fixtures/inlined.cpp tests/fixtures/inlined.h | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CXX) $(SOURCE_LINE_CXXFLAGS) -gdwarf-4 $< -o $@

# Fails unless .debug_info came out compressed (the C flag), which is what it tests.
$(FIXTURE_DIR)/inlined-gz: tests/fixtures/inlined.cpp tests/fixtures/inlined.h | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CXX) $(SOURCE_LINE_CXXFLAGS) -gz $< -o $@
	$(Q)readelf -SW $@ | grep -q '\.debug_info .* C '

$(FIXTURE_DIR)/inlined-split $(FIXTURE_DIR)/inlined-split.debug &: tests/fixtures/inlined.cpp tests/fixtures/inlined.h \
		| $(FIXTURE_DIR)
	$(call msg,FIXTURE,$(FIXTURE_DIR)/inlined-split)
	$(Q)$(CXX) $(SOURCE_LINE_CXXFLAGS) $< -o $(FIXTURE_DIR)/inlined-split
	$(Q)objcopy --only-keep-debug $(FIXTURE_DIR)/inlined-split $(FIXTURE_DIR)/inlined-split.debug
	$(Q)strip --strip-debug $(FIXTURE_DIR)/inlined-split
	$(Q)objcopy --add-gnu-debuglink=$(FIXTURE_DIR)/inlined-split.debug $(FIXTURE_DIR)/inlined-split

$(FIXTURE_DIR)/inlined-clang: tests/fixtures/inlined.cpp tests/fixtures/inlined.h | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(SOURCE_LINE_CLANGXX) $(SOURCE_LINE_CXXFLAGS) $< -o $@

$(FIXTURE_DIR)/inlined.cpp $(FIXTURE_DIR)/inlined.h: $(FIXTURE_DIR)/%: tests/fixtures/% | $(FIXTURE_DIR)
	$(Q)cp $< $@

fixtures: $(SOURCE_LINE_PROGRAMS) $(SOURCE_LINE_PROGRAMS:%=%.nm) $(FIXTURE_DIR)/inlined-split.debug \
	$(FIXTURE_DIR)/inlined.cpp $(FIXTURE_DIR)/inlined.h $(FIXTURE_DIR)/inlined.loads

# inlined with a .gnu_debugaltlink naming "alt.fifo" beside it: the test makes that name
# a FIFO and its names alt-file references, and checks the FIFO is never opened.
$(FIXTURE_DIR)/inlined-altlink: $(FIXTURE_DIR)/inlined
	$(call msg,FIXTURE,$@)
	$(Q)printf 'alt.fifo\000' > $@.link
	$(Q)head -c 20 /dev/zero | tr '\000' '\001' >> $@.link
	$(Q)objcopy --add-section .gnu_debugaltlink=$@.link $< $@
	$(Q)rm -f $@.link

fixtures: $(FIXTURE_DIR)/inlined-altlink

# Separate debug files. hello-nosyms keeps no function symbol at all (no -rdynamic, strip
# --strip-all); hello-nosyms.debug is what objcopy --only-keep-debug kept of it, which the
# tests find by build id in a .build-id tree they make. hello-debuglink is the same program
# naming that file in .gnu_debuglink (its name and CRC): found beside it. X.nm of both is
# the unstripped program's.
DEBUG_FIXTURES := $(addprefix $(FIXTURE_DIR)/,hello-nosyms hello-nosyms.debug hello-debuglink calls) \
	$(addprefix $(FIXTURE_DIR)/,$(addsuffix .nm,hello-nosyms hello-debuglink calls)) \
	$(addprefix $(FIXTURE_DIR)/,$(addsuffix .loads,hello-nosyms hello-debuglink calls)) \
	$(addprefix $(FIXTURE_DIR)/,$(addsuffix .buildid,hello-nosyms hello-debuglink))

$(FIXTURE_DIR)/hello-nosyms.full: tests/fixtures/hello.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIE -pie $< -o $@

$(FIXTURE_DIR)/hello-nosyms.debug: $(FIXTURE_DIR)/hello-nosyms.full
	$(Q)objcopy --only-keep-debug $< $@

$(FIXTURE_DIR)/hello-nosyms: $(FIXTURE_DIR)/hello-nosyms.full
	$(call msg,FIXTURE,$@)
	$(Q)strip --strip-all $< -o $@

$(FIXTURE_DIR)/hello-debuglink: $(FIXTURE_DIR)/hello-nosyms $(FIXTURE_DIR)/hello-nosyms.debug
	$(call msg,FIXTURE,$@)
	$(Q)objcopy --add-gnu-debuglink=$(FIXTURE_DIR)/hello-nosyms.debug $< $@

$(FIXTURE_DIR)/hello-nosyms.nm $(FIXTURE_DIR)/hello-debuglink.nm: $(FIXTURE_DIR)/hello-nosyms.full
	$(Q)nm --defined-only $< > $@

$(FIXTURE_DIR)/calls: tests/fixtures/calls.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -falign-functions=1 -fPIE -pie $< -o $@

# X.plt: the NAME@plt entries objdump makes of the PLT, "ADDRESS NAME" lines.
$(FIXTURE_DIR)/%.plt: $(FIXTURE_DIR)/%
	$(Q)objdump -d -j .plt -j .plt.sec $< | awk '/^[0-9a-f]+ <[^>]*@plt>:$$/ { gsub(/[<>:]/, "", $$2); print $$1, $$2 }' > $@

fixtures: $(DEBUG_FIXTURES) $(FIXTURE_DIR)/hello-pie.plt $(FIXTURE_DIR)/cxx.plt

# Unwind tables (unwind/table): unwind.c built the ways the table compiler meets code,
# each with X.frames beside it (readelf --debug-dump=frames-interp: the rows the tests check
# each table against), X.loads and X.buildid. unwind-nofp: -O2 -fomit-frame-pointer, non-PIE at
# 0x400000, so addresses are not file offsets. unwind-fp: frame pointers (CFA = rbp + 16),
# a PIE whose first segment is at 0x200000. unwind-ibt: IBT's lazy PLT (a third PLT
# expression, DW_OP_lit9). unwind-dwarf: -fno-asynchronous-unwind-tables -g: .eh_frame
# holds crt's code only, .debug_frame the rest. unwind-dwarf-stripped: the same program
# with no CFI left at all; its debug file's .debug_frame (unwind-dwarf.debug, whose
# segments hold no bytes) is all there is. unwind-dwarf-gz: unwind-dwarf, its .debug_frame
# compressed.
UNWIND_FIXTURES := $(addprefix $(FIXTURE_DIR)/,unwind-nofp unwind-fp unwind-ibt unwind-dwarf)
UNWIND_CFLAGS := -O2 -g -Wl,--build-id

$(FIXTURE_DIR)/unwind-nofp: tests/fixtures/unwind.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(UNWIND_CFLAGS) -fomit-frame-pointer -fno-pie -no-pie $< -o $@

$(FIXTURE_DIR)/unwind-fp: tests/fixtures/unwind.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(UNWIND_CFLAGS) -fno-omit-frame-pointer -fPIE -pie -Wl,-Ttext-segment=0x200000 $< -o $@

$(FIXTURE_DIR)/unwind-ibt: tests/fixtures/unwind.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(UNWIND_CFLAGS) -fomit-frame-pointer -fcf-protection=full -Wl,-z,ibtplt -fPIE -pie $< -o $@

$(FIXTURE_DIR)/unwind-dwarf: tests/fixtures/unwind.c | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(UNWIND_CFLAGS) -fno-asynchronous-unwind-tables -fPIE -pie -Wl,-Ttext-segment=0x300000 $< -o $@

$(FIXTURE_DIR)/unwind-dwarf.debug: $(FIXTURE_DIR)/unwind-dwarf
	$(Q)objcopy --only-keep-debug $< $@

$(FIXTURE_DIR)/unwind-dwarf-stripped: $(FIXTURE_DIR)/unwind-dwarf
	$(call msg,FIXTURE,$@)
	$(Q)strip --strip-debug --remove-section=.eh_frame --remove-section=.eh_frame_hdr $< -o $@

# readelf fails on a debug file (its .interp holds no bytes) after printing the frames:
# its status is not the test, an FDE in what it printed is.
# unwind-dwarf with its .debug_frame compressed (SHF_COMPRESSED, zlib).
$(FIXTURE_DIR)/unwind-dwarf-gz: $(FIXTURE_DIR)/unwind-dwarf
	$(call msg,FIXTURE,$@)
	$(Q)objcopy --compress-debug-sections=zlib $< $@
	$(Q)readelf -SW $@ | grep -q '\.debug_frame .* C '

$(FIXTURE_DIR)/%.frames: $(FIXTURE_DIR)/%
	$(Q)readelf --debug-dump=frames-interp $< > $@ 2>/dev/null; grep -q ' FDE ' $@

fixtures: $(UNWIND_FIXTURES) $(UNWIND_FIXTURES:%=%.frames) $(UNWIND_FIXTURES:%=%.loads) $(UNWIND_FIXTURES:%=%.buildid) \
	$(FIXTURE_DIR)/unwind-dwarf.debug $(FIXTURE_DIR)/unwind-dwarf.debug.frames \
	$(FIXTURE_DIR)/unwind-dwarf-stripped $(FIXTURE_DIR)/unwind-dwarf-stripped.loads $(FIXTURE_DIR)/unwind-dwarf-gz

# Rust names (elf/demangle): rust_names.rs built with rustc's default, legacy mangling
# (_ZN...17h<hash>E) and with v0 mangling (_R...). A rustc without -C
# symbol-mangling-version=v0 (before 1.59, where v0 took -Z on nightly) leaves rust-v0
# empty and says why in rust-v0.skip, and the test skips that half.
RUSTC ?= rustc
RUST_FIXTURE_FLAGS := -O -g
# A newer rustc reads make's jobserver from MAKEFLAGS and warns that its fds are closed.
RUST_FIXTURE_ENV := MAKEFLAGS=

$(FIXTURE_DIR)/rust-legacy: tests/fixtures/rust_names.rs | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)command -v $(RUSTC) >/dev/null || { echo "$(RUSTC) not found: scripts/install-deps.sh --test installs it" >&2; exit 1; }
	$(Q)$(RUST_FIXTURE_ENV) $(RUSTC) $(RUST_FIXTURE_FLAGS) $< -o $@

$(FIXTURE_DIR)/rust-v0: tests/fixtures/rust_names.rs | $(FIXTURE_DIR)
	$(call msg,FIXTURE,$@)
	$(Q)command -v $(RUSTC) >/dev/null || { echo "$(RUSTC) not found: scripts/install-deps.sh --test installs it" >&2; exit 1; }
	$(Q)rm -f $@.skip; \
	if $(RUST_FIXTURE_ENV) $(RUSTC) $(RUST_FIXTURE_FLAGS) -C symbol-mangling-version=v0 $< -o $@ 2>$@.err; then \
		cat $@.err >&2; \
	elif grep -q 'symbol-mangling-version' $@.err; then \
		{ echo "$$($(RUSTC) --version) does not take -C symbol-mangling-version=v0:"; cat $@.err; } >$@.skip; \
		: >$@; \
	else \
		cat $@.err >&2; rm -f $@.err; exit 1; \
	fi; \
	rm -f $@.err

# The skipped half has no symbols to list.
$(FIXTURE_DIR)/rust-v0.nm: $(FIXTURE_DIR)/rust-v0
	$(Q)if [ -s $< ]; then nm --defined-only $< >$@; else : >$@; fi

fixtures: $(addprefix $(FIXTURE_DIR)/,rust-legacy rust-legacy.nm rust-v0 rust-v0.nm)
