// elf/demangle.cpp: C++ (Itanium ABI) and Rust symbol names as people read them, through
// libiberty's demanglers, which binutils, gdb and perf use.
#include "elf/demangle.h"

#include <cstdlib>
#include <memory>

// libiberty.h would declare basename(), which <cstring> already declares for C++.
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>

std::string demangle(std::string_view name)
{
	// Only these prefixes: libiberty also "demangles" C names such as _GLOBAL__sub_I_main.
	if (!name.starts_with("_Z") && !name.starts_with("_R"))
		return std::string(name);
	std::string terminated(name);
	// Rust first: a legacy Rust name is a valid C++ name too, and only the Rust demangler
	// drops its hash (without DMGL_VERBOSE). With DMGL_PARAMS | DMGL_ANSI a C++ name reads
	// as abi::__cxa_demangle printed it, parameters and qualifiers included.
	const int options = DMGL_PARAMS | DMGL_ANSI;
	char *readable = rust_demangle(terminated.c_str(), options);
	if (!readable)
		readable = cplus_demangle_v3(terminated.c_str(), options);
	std::unique_ptr<char, decltype(&std::free)> owned(readable, &std::free);
	return owned ? std::string(owned.get()) : terminated;
}

size_t leading_underscores(std::string_view name)
{
	size_t n = 0;
	while (n < name.size() && name[n] == '_')
		n++;
	return n;
}
