// runtime/wanted.cpp: the pids a runtime's kernel walk asked about.
#include "runtime/wanted.h"

#include <bpf/bpf.h>

std::vector<uint32_t> wanted_pids(int fd)
{
	std::vector<uint32_t> wanted;
	uint32_t key, next;
	for (uint32_t *prev = nullptr; bpf_map_get_next_key(fd, prev, &next) == 0; prev = &key) {
		wanted.push_back(next);
		key = next;
	}
	return wanted;
}
