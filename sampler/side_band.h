// sampler/side_band.h: perf's side-band records (mmap2, comm/exec, fork, exit, ksymbol)
// from one dummy event per CPU, read while sampling runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/fd.h"
#include "proc/process_history.h"

// One dummy perf event per CPU whose ring buffer carries the side-band records.
class SideBand {
public:
	// Throws RunError when an event cannot be opened or mapped.
	explicit SideBand(const std::vector<int> &cpus, size_t data_pages = 256);
	~SideBand();
	SideBand(const SideBand &) = delete;
	SideBand &operator=(const SideBand &) = delete;

	// Drains every ring buffer into history, records in time order.
	void poll(ProcessHistory &history);

private:
	struct Ring {
		UniqueFd fd;
		uint8_t *base = nullptr;
		size_t length = 0;
		uint64_t last_time = 0; // CLOCK_MONOTONIC: no record read later was written before it
	};

	std::vector<Ring> rings_;
	// One poll's records, copied out of the rings one after the other (kept from poll to
	// poll, so that the records of a busy machine cost no allocation each), and each
	// record's place in it.
	std::vector<uint8_t> bytes_;
	struct Pending {
		uint64_t time;
		size_t offset, size;
	};
	std::vector<Pending> pending_;
	std::vector<std::span<uint8_t>> ring_records_;

	std::span<uint8_t> record(const Pending &pending) { return {bytes_.data() + pending.offset, pending.size}; }
};
