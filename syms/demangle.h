// syms/demangle.h: C++ (Itanium ABI) symbol names as people read them.
#pragma once

#include <string>
#include <string_view>

// "_ZN7fixture5spinEv" -> "fixture::spin()"; any other name comes back unchanged.
std::string demangle(std::string_view name);
