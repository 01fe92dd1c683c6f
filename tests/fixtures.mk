# tests/fixtures.mk: the ELF files and text fixtures the unit tests read, built here.
# Beside each program: X.nm (its symbols as nm sees them), X.buildid (readelf -n's build
# id) and X.loads (its PT_LOAD segments: offset, address, file size), the answers the
# tests check the project's own ELF reader against.

FIXTURE_DIR := $(OUTPUT)/fixtures
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
