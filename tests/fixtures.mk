# tests/fixtures.mk: the ELF files and text fixtures the unit tests read, built here.
FIXTURES :=

fixtures: $(FIXTURES)
