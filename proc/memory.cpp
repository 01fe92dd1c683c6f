// proc/memory.cpp: reads of another process's memory.
#include "proc/memory.h"

#include <unistd.h>

#include <string>

UniqueFd open_process_memory(uint32_t pid)
{
	return open_read_only(("/proc/" + std::to_string(pid) + "/mem").c_str());
}

bool read_process_memory(int mem_fd, uint64_t address, void *out, size_t size)
{
	return pread(mem_fd, out, size, off_t(address)) == ssize_t(size);
}
