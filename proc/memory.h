// proc/memory.h: reads of another process's memory, through an fd of its /proc/PID/mem.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/fd.h"

// A process's memory, read-only: an fd of /proc/PID/mem (not valid when the process is
// gone or cannot be read).
UniqueFd open_process_memory(uint32_t pid);

// Reads size bytes of a process's memory (an fd of /proc/PID/mem) at address; false when
// any of them cannot be read.
bool read_process_memory(int mem_fd, uint64_t address, void *out, size_t size);

// One value of type T at address.
template <typename T>
bool read_process_value(int mem_fd, uint64_t address, T &out)
{
	return read_process_memory(mem_fd, address, &out, sizeof(out));
}
