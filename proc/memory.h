// proc/memory.h: reads of another process's memory, through an fd of its /proc/PID/mem.
#pragma once

#include <cstddef>
#include <cstdint>

// Reads size bytes of a process's memory (an fd of /proc/PID/mem) at address; false when
// any of them cannot be read.
bool read_process_memory(int mem_fd, uint64_t address, void *out, size_t size);
