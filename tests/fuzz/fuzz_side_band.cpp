// tests/fuzz/fuzz_side_band.cpp: perf side-band records (mmap2, comm, fork, exit, ksymbol,
// lost) through ProcessHistory::apply, then every image and kernel symbol they left looked up.
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>

#include "proc/process_history.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// The input is a ring's worth of records back to back, each sized by its header; a
	// record's own size field may lie, so apply() sees it whole but checks it.
	ProcessHistory history;
	history.add_snapshot(1, "init", {}, 1);
	std::set<uint32_t> pids = {1};
	std::set<uint64_t> times = {0, 1, UINT64_MAX};
	std::set<uint64_t> addresses = {0, UINT64_MAX}; // what each record's first 8 bytes say
	size_t offset = 0;
	while (size - offset >= sizeof(perf_event_header) && pids.size() < 64) {
		perf_event_header header;
		std::memcpy(&header, data + offset, sizeof(header));
		size_t length = header.size < sizeof(header) ? sizeof(header) : header.size;
		length = std::min(length, size - offset);
		std::span<const uint8_t> record(data + offset, length);
		uint32_t pid = 0;
		if (length >= sizeof(header) + sizeof(pid)) {
			std::memcpy(&pid, data + offset + sizeof(header), sizeof(pid));
			pids.insert(pid);
		}
		uint64_t address = 0;
		if (length >= sizeof(header) + sizeof(address)) {
			std::memcpy(&address, data + offset + sizeof(header), sizeof(address));
			addresses.insert({address, address + 1});
		}
		times.insert(ProcessHistory::record_time(record));
		(void)history.apply(record);
		offset += length;
	}

	for (uint32_t pid : pids) {
		(void)history.exited(pid);
		for (uint64_t time : times) {
			const ProcessImage *image = history.image_at(pid, time);
			if (!image)
				continue;
			fuzz_touch(image->comm.data(), image->comm.size());
			FUZZ_CHECK(image->maps);
			// Sorted by start and never overlapping, as ProcessImage promises.
			const MapEntry *previous = nullptr;
			for (const MapEntry &entry : *image->maps) {
				FUZZ_CHECK(entry.start < entry.end);
				FUZZ_CHECK(!previous || previous->end <= entry.start);
				previous = &entry;
				fuzz_touch(entry.path.data(), entry.path.size());
				for (uint64_t address : {entry.start, entry.end - 1, entry.end}) {
					const MapEntry *found = image->find(address);
					FUZZ_CHECK(!found || (found->start <= address && address < found->end));
				}
			}
		}
	}
	// Kernel symbols (BPF programs, trampolines) from ksymbol records.
	for (uint64_t address : addresses)
		if (const KernelSymbolRecord *symbol = history.kernel_symbol(address)) {
			FUZZ_CHECK(symbol->start <= address && address < symbol->end);
			fuzz_touch(symbol->name.data(), symbol->name.size());
		}
	history.forget_exited([](uint32_t pid) { return pid % 2 == 0; });
	return 0;
}
