// elf/demangle.h: C++ (Itanium ABI) and Rust symbol names as people read them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

// As perf and rustfilt print them: "_ZN7fixture5spinEv" -> "fixture::spin()"; a legacy Rust
// name without its hash ("_ZN3std2rt10lang_start17h0123456789abcdefE" -> "std::rt::lang_start");
// a Rust v0 name ("_RNvCs1234_5crate3run" -> "crate::run"). Any other name comes back
// unchanged.
std::string demangle(std::string_view name);

// How many '_' a name begins with. Of several names at one address, people know the one
// with fewest: "getpid" over "__getpid".
size_t leading_underscores(std::string_view name);
