// syms/demangle.cpp: C++ (Itanium ABI) symbol names as people read them.
#include "syms/demangle.h"

#include <cstdlib>
#include <cxxabi.h>
#include <memory>

std::string demangle(std::string_view name)
{
	if (!name.starts_with("_Z"))
		return std::string(name);
	std::string terminated(name);
	int status = 0;
	std::unique_ptr<char, decltype(&std::free)> readable(
		abi::__cxa_demangle(terminated.c_str(), nullptr, nullptr, &status), &std::free);
	if (status != 0 || !readable)
		return terminated;
	return readable.get();
}
