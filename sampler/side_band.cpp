// sampler/side_band.cpp: one dummy perf event per CPU with mmap2/comm/task/ksymbol records,
// drained from its ring buffer into a ProcessHistory in time order.
#include "sampler/side_band.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/clock.h"
#include "sampler/sampler.h"

SideBand::SideBand(const std::vector<int> &cpus, size_t data_pages)
{
	const size_t page = size_t(sysconf(_SC_PAGESIZE));
	perf_event_attr attr{};
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	attr.mmap = 1;
	attr.mmap2 = 1;
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.task = 1;
	attr.ksymbol = 1; // BPF programs loaded and unloaded while sampling
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.watermark = 1;
	attr.wakeup_watermark = uint32_t(data_pages * page / 2);

	for (int cpu : cpus) {
		Ring ring;
		ring.fd.reset(int(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)));
		if (!ring.fd)
			throw RunError("cannot open the side-band perf event on CPU " + std::to_string(cpu) + ": " +
				       std::strerror(errno));
		ring.length = (data_pages + 1) * page;
		void *base = mmap(nullptr, ring.length, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd.get(), 0);
		if (base == MAP_FAILED)
			throw RunError("cannot map the side-band ring buffer on CPU " + std::to_string(cpu) + ": " +
				       std::strerror(errno) + " (raise ulimit -l or kernel.perf_event_mlock_kb)");
		ring.base = static_cast<uint8_t *>(base);
		ring.last_time = uint64_t(clocks::monotonic_ns());
		rings_.push_back(std::move(ring));
	}
}

SideBand::~SideBand()
{
	for (Ring &ring : rings_)
		munmap(ring.base, ring.length);
}

void SideBand::poll(ProcessHistory &history)
{
	bytes_.clear();
	pending_.clear();
	for (Ring &ring : rings_) {
		auto *meta = reinterpret_cast<perf_event_mmap_page *>(ring.base);
		const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		const uint64_t now = uint64_t(clocks::monotonic_ns()); // every record up to head was written before
		uint64_t tail = meta->data_tail;
		const uint8_t *data = ring.base + meta->data_offset;
		const uint64_t size = meta->data_size;
		auto copy_out = [&](uint64_t from, void *to, size_t n) {
			size_t at = size_t(from % size), first = std::min<size_t>(n, size - at);
			std::memcpy(to, data + at, first);
			std::memcpy(static_cast<uint8_t *>(to) + first, data, n - first);
		};
		const size_t first = pending_.size();
		while (head - tail >= sizeof(perf_event_header)) {
			perf_event_header header;
			copy_out(tail, &header, sizeof(header));
			if (header.size < sizeof(header) || header.size > head - tail)
				break;
			const size_t offset = bytes_.size();
			bytes_.resize(offset + header.size);
			copy_out(tail, bytes_.data() + offset, header.size);
			pending_.push_back({0, offset, header.size});
			tail += header.size;
		}
		__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
		ring_records_.clear();
		for (size_t i = first; i < pending_.size(); i++)
			ring_records_.push_back(record(pending_[i]));
		ring.last_time = ProcessHistory::date_undated(ring_records_, ring.last_time, now);
	}
	// Each CPU's records are in order, but a fork on one CPU may precede the exec on
	// another: apply them all in time order. Those of one time stay in the order they were
	// read (their offsets grow with it), as a stable sort keeps them; std::sort allocates
	// nothing, where stable_sort's buffer was a malloc each poll (4 % of an agent's CPU with
	// processes coming and going, in malloc_consolidate).
	for (Pending &pending : pending_)
		pending.time = ProcessHistory::record_time(record(pending));
	std::sort(pending_.begin(), pending_.end(), [](const Pending &a, const Pending &b) {
		return a.time != b.time ? a.time < b.time : a.offset < b.offset;
	});
	for (const Pending &pending : pending_)
		history.apply(record(pending));
}
