// runtime/wanted.h: the processes a runtime's kernel walk asked user space about (a hash
// map keyed by pid, as each runtime's NAME_wanted), as user space takes them.
#pragma once

#include <cstdint>
#include <vector>

// The pids in the map of fd, as they are now; the caller deletes each it has answered.
std::vector<uint32_t> wanted_pids(int fd);
