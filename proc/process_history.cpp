// proc/process_history.cpp: parses perf side-band records into per-process image
// histories, and snapshots the processes alive at start from /proc.
#include "proc/process_history.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/fd.h"

namespace {

// The sample_id trailer of every non-sample record with sample_type TID|TIME.
struct SampleId {
	uint32_t pid, tid;
	uint64_t time;
};

// What follows a PERF_RECORD_KSYMBOL's header, before the name.
struct KsymbolBody {
	uint64_t addr;
	uint32_t len;
	uint16_t type, flags;
};

template <typename T>
bool read_at(std::span<const uint8_t> bytes, size_t offset, T &out)
{
	if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
		return false;
	std::memcpy(&out, bytes.data() + offset, sizeof(T));
	return true;
}

// A NUL-terminated string in [offset, end); false if it runs off the end.
bool read_string(std::span<const uint8_t> bytes, size_t offset, size_t end, std::string &out)
{
	if (offset > end || end > bytes.size())
		return false;
	const uint8_t *start = bytes.data() + offset;
	const void *nul = std::memchr(start, 0, end - offset);
	if (!nul)
		return false;
	out.assign(reinterpret_cast<const char *>(start), static_cast<const uint8_t *>(nul) - start);
	return true;
}

std::shared_ptr<const std::vector<MapEntry>> empty_maps()
{
	static const auto empty = std::make_shared<const std::vector<MapEntry>>();
	return empty;
}

} // namespace

const MapEntry *ProcessImage::find(uint64_t address) const
{
	if (!maps)
		return nullptr;
	auto it = std::upper_bound(maps->begin(), maps->end(), address,
				   [](uint64_t a, const MapEntry &e) { return a < e.start; });
	if (it == maps->begin())
		return nullptr;
	--it;
	return address < it->end ? &*it : nullptr;
}

void ProcessHistory::add_snapshot(uint32_t pid, std::string comm, std::vector<MapEntry> maps, uint64_t now_ns)
{
	std::sort(maps.begin(), maps.end(), [](const MapEntry &a, const MapEntry &b) { return a.start < b.start; });
	ProcessImage image;
	image.since_ns = now_ns;
	image.comm = std::move(comm);
	image.maps = std::make_shared<std::vector<MapEntry>>(std::move(maps)); // not const: see add_mapping
	image.cgroup = cgroup_now(pid, nullptr);
	insert_image(pid, std::move(image));
}

std::shared_ptr<const CgroupLabels> ProcessHistory::cgroup_now(uint32_t pid,
							       std::shared_ptr<const CgroupLabels> before) const
{
	if (proc_root_.empty())
		return before;
	std::optional<CgroupLabels> now = read_cgroup(pid, proc_root_);
	if (!now || (before && *before == *now))
		return before;
	return std::make_shared<const CgroupLabels>(std::move(*now));
}

ProcessImage &ProcessHistory::insert_image(uint32_t pid, ProcessImage image)
{
	auto &images = processes_[pid].images;
	auto at = std::upper_bound(images.begin(), images.end(), image.since_ns,
				   [](uint64_t t, const ProcessImage &i) { return t < i.since_ns; });
	return *images.insert(at, std::move(image));
}

const ProcessImage *ProcessHistory::image_at(uint32_t pid, uint64_t time_ns) const
{
	auto it = processes_.find(pid);
	if (it == processes_.end() || it->second.images.empty())
		return nullptr;
	const auto &images = it->second.images;
	auto after = std::upper_bound(images.begin(), images.end(), time_ns,
				      [](uint64_t t, const ProcessImage &i) { return t < i.since_ns; });
	return after == images.begin() ? &images.front() : &*(after - 1);
}

ProcessImage *ProcessHistory::image_for_update(uint32_t pid, uint64_t time_ns)
{
	const ProcessImage *image = image_at(pid, time_ns);
	if (!image || image->since_ns > time_ns) {
		// Nothing known of the process at that time: it began before the snapshot, or
		// this record was read before the exec or fork that starts the next image.
		ProcessImage earlier;
		earlier.comm = image ? image->comm : "";
		earlier.maps = empty_maps();
		earlier.cgroup = image ? image->cgroup : cgroup_now(pid, nullptr);
		insert_image(pid, std::move(earlier));
	}
	return const_cast<ProcessImage *>(image_at(pid, time_ns));
}

std::vector<uint32_t> ProcessHistory::live_pids() const
{
	std::vector<uint32_t> pids;
	for (const auto &[pid, process] : processes_)
		if (!process.exited)
			pids.push_back(pid);
	return pids;
}

bool ProcessHistory::exited(uint32_t pid) const
{
	auto it = processes_.find(pid);
	return it != processes_.end() && it->second.exited;
}

void ProcessHistory::add_mapping(uint32_t pid, uint64_t time_ns, MapEntry entry)
{
	ProcessImage *image = image_for_update(pid, time_ns);
	// munmap leaves no record, so a process that maps and unmaps code in a loop would grow
	// this list (and the cost of every later record) without end: past the cap, a mapping
	// that overlaps nothing known is dropped, and those addresses stay unnamed.
	if (image->maps->size() >= kMaxMappingsPerImage && !image->find(entry.start) &&
	    !image->find(entry.end - 1)) {
		dropped_mappings_++;
		return;
	}
	// The list is shared with a forked parent or child until one of them maps something:
	// then it is copied. Unshared, it is changed in place (every list but the static
	// empty one is made non-const, for this).
	std::vector<MapEntry> *maps;
	std::shared_ptr<std::vector<MapEntry>> copy;
	if (image->maps.use_count() == 1) {
		maps = const_cast<std::vector<MapEntry> *>(image->maps.get());
	} else {
		copy = std::make_shared<std::vector<MapEntry>>(*image->maps);
		maps = copy.get();
	}
	// A new mapping replaces whatever it overlaps (MAP_FIXED, or a range reused after
	// munmap, which has no record of its own); the parts outside it survive. The list is
	// sorted and without overlaps, so those it overlaps lie next to each other.
	auto first = std::upper_bound(maps->begin(), maps->end(), entry.start,
				      [](uint64_t start, const MapEntry &m) { return start < m.end; });
	auto last = std::lower_bound(first, maps->end(), entry.end,
				     [](const MapEntry &m, uint64_t end) { return m.start < end; });
	std::vector<MapEntry> replacement;
	if (first != last && first->start < entry.start) {
		MapEntry head = *first;
		head.end = entry.start;
		replacement.push_back(std::move(head));
	}
	std::optional<MapEntry> tail;
	if (first != last && (last - 1)->end > entry.end) {
		tail = *(last - 1);
		tail->offset += entry.end - tail->start;
		tail->start = entry.end;
	}
	replacement.push_back(std::move(entry));
	if (tail)
		replacement.push_back(std::move(*tail));
	auto at = maps->erase(first, last);
	maps->insert(at, std::make_move_iterator(replacement.begin()), std::make_move_iterator(replacement.end()));
	if (copy)
		image->maps = std::move(copy);
}

uint64_t ProcessHistory::record_time(std::span<const uint8_t> record)
{
	SampleId id{};
	perf_event_header header{};
	if (!read_at(record, 0, header) || header.type == PERF_RECORD_SAMPLE ||
	    !read_at(record, record.size() - std::min(record.size(), sizeof(id)), id) ||
	    record.size() < sizeof(header) + sizeof(id))
		return 0;
	return id.time;
}

uint64_t ProcessHistory::date_undated(std::span<const std::span<uint8_t>> records, uint64_t after_ns, uint64_t now_ns)
{
	uint64_t before = after_ns;
	for (size_t i = 0; i < records.size(); i++) {
		const std::span<uint8_t> record = records[i];
		uint64_t time = record_time(record);
		if (time) {
			before = std::max(before, time);
			continue;
		}
		perf_event_header header{};
		KsymbolBody ksymbol{};
		if (!read_at(record, 0, header) || header.type == PERF_RECORD_SAMPLE ||
		    record.size() < sizeof(header) + sizeof(SampleId))
			continue;
		const bool latest = header.type == PERF_RECORD_KSYMBOL && read_at(record, sizeof(header), ksymbol) &&
				    (ksymbol.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER);
		time = latest ? now_ns : before;
		for (size_t j = i + 1; latest && j < records.size(); j++)
			if (uint64_t next = record_time(records[j])) {
				time = next;
				break;
			}
		std::memcpy(record.data() + record.size() - sizeof(SampleId) + offsetof(SampleId, time), &time,
			    sizeof(time));
	}
	return std::max(before, now_ns);
}

bool ProcessHistory::apply(std::span<const uint8_t> record)
{
	perf_event_header header{};
	if (!read_at(record, 0, header) || header.size != record.size() ||
	    record.size() < sizeof(header) + sizeof(SampleId))
		return false;
	const size_t trailer = record.size() - sizeof(SampleId);
	const uint64_t time = record_time(record);

	switch (header.type) {
	case PERF_RECORD_MMAP2: {
		struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			uint32_t maj, min;
			uint64_t ino, ino_generation;
			uint32_t prot, flags;
		} body;
		MapEntry entry;
		if (!read_at(record, sizeof(header), body) ||
		    !read_string(record, sizeof(header) + sizeof(body), trailer, entry.path))
			return false;
		// pid 0: a process outside the PID namespace of profile, which has no id for it.
		if (!(body.prot & PROT_EXEC) || body.len == 0 || body.addr + body.len < body.addr || body.pid == 0)
			return true;
		entry.start = body.addr;
		entry.end = body.addr + body.len;
		entry.offset = body.pgoff;
		entry.perms = {body.prot & PROT_READ ? 'r' : '-', body.prot & PROT_WRITE ? 'w' : '-', 'x',
			       body.flags & MAP_SHARED ? 's' : 'p'};
		if (!(header.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
			entry.dev_major = body.maj;
			entry.dev_minor = body.min;
			entry.inode = body.ino;
		}
		if (entry.path == "//anon")
			entry.path.clear();
		add_mapping(body.pid, time, std::move(entry));
		return true;
	}
	case PERF_RECORD_COMM: {
		uint32_t pid = 0;
		std::string comm;
		if (!read_at(record, sizeof(header), pid) || !read_string(record, sizeof(header) + 8, trailer, comm))
			return false;
		if (pid == 0) // outside profile's PID namespace
			return true;
		if (header.misc & PERF_RECORD_MISC_COMM_EXEC) {
			ProcessImage image;
			image.since_ns = time;
			image.comm = std::move(comm);
			image.maps = empty_maps();
			const ProcessImage *before = image_at(pid, time);
			image.cgroup = before ? before->cgroup : nullptr;
			if (!proc_root_.empty())
				labels_pending_.push_back({pid, time}); // read by settle_labels
			insert_image(pid, std::move(image));
			processes_[pid].exited = false;
		} else {
			image_for_update(pid, time)->comm = std::move(comm);
		}
		return true;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		struct {
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} body;
		if (!read_at(record, sizeof(header), body))
			return false;
		if (body.pid != body.tid)
			return true; // a thread: the process's image is unchanged
		if (header.type == PERF_RECORD_EXIT) {
			auto it = processes_.find(body.pid);
			if (it != processes_.end() && !it->second.exited) {
				it->second.exited = true;
				exited_unforgotten_.push_back(body.pid);
			}
			return true;
		}
		if (body.pid == body.ppid)
			return true;
		// A new process starts as a copy of its parent; the maps are shared until one
		// of them maps something.
		ProcessImage image;
		image.since_ns = body.time;
		if (const ProcessImage *parent = image_at(body.ppid, body.time)) {
			image.comm = parent->comm;
			image.maps = parent->maps;
			image.cgroup = parent->cgroup;
		} else {
			image.maps = empty_maps();
			image.cgroup = cgroup_now(body.pid, nullptr);
		}
		// A fork leaves the child in its parent's group: read only where the parent is
		// unknown. A container runtime moves its process before the exec, which reads it
		// again (a file read per fork was a fifth of a busy machine's agent CPU).
		auto it = processes_.find(body.pid);
		if (it != processes_.end() && it->second.exited) {
			processes_.erase(it); // the pid was reused: the old process is gone
		}
		insert_image(body.pid, std::move(image));
		return true;
	}
	case PERF_RECORD_KSYMBOL: {
		KsymbolBody body;
		KernelSymbolRecord symbol;
		if (!read_at(record, sizeof(header), body) ||
		    !read_string(record, sizeof(header) + sizeof(body), trailer, symbol.name))
			return false;
		auto by_start = [](const KernelSymbolRecord &a, uint64_t start) { return a.start < start; };
		if (body.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER) {
			// The newest record of that name at that address still registered.
			auto first = std::lower_bound(kernel_symbols_.begin(), kernel_symbols_.end(), body.addr, by_start);
			KernelSymbolRecord *match = nullptr;
			for (auto it = first; it != kernel_symbols_.end() && it->start == body.addr; ++it)
				if (it->name == symbol.name && it->until_ns == UINT64_MAX && (!match || it->order > match->order))
					match = &*it;
			if (match)
				match->until_ns = std::max(time, match->since_ns);
			return true;
		}
		if (body.len == 0 || body.addr + body.len < body.addr)
			return true;
		// A long run that loads programs without end keeps the newest.
		if (kernel_symbols_.size() >= kMaxKernelSymbols) {
			const uint64_t oldest_kept = kernel_symbol_order_ - kMaxKernelSymbols / 2;
			std::erase_if(kernel_symbols_, [&](const KernelSymbolRecord &k) { return k.order < oldest_kept; });
		}
		symbol.start = body.addr;
		symbol.end = body.addr + body.len;
		symbol.bpf = body.type == PERF_RECORD_KSYMBOL_TYPE_BPF;
		symbol.since_ns = time;
		symbol.order = kernel_symbol_order_++;
		longest_kernel_symbol_ = std::max<uint64_t>(longest_kernel_symbol_, body.len);
		// After every record of the same start: the order stays sorted by start, then age.
		auto at = std::lower_bound(kernel_symbols_.begin(), kernel_symbols_.end(), body.addr + 1, by_start);
		kernel_symbols_.insert(at, std::move(symbol));
		return true;
	}
	case PERF_RECORD_LOST: {
		struct {
			uint64_t id, lost;
		} body;
		if (!read_at(record, sizeof(header), body))
			return false;
		lost_ += body.lost;
		return true;
	}
	default:
		return true;
	}
}

const KernelSymbolRecord *ProcessHistory::kernel_symbol(uint64_t address, uint64_t time_ns) const
{
	// How far time_ns lies outside the record's life; 0 inside it.
	auto distance = [time_ns](const KernelSymbolRecord &k) -> uint64_t {
		if (time_ns < k.since_ns)
			return k.since_ns - time_ns;
		if (time_ns >= k.until_ns)
			return time_ns - k.until_ns + 1;
		return 0;
	};
	const KernelSymbolRecord *best = nullptr;
	uint64_t best_distance = 0;
	// The records that start after address cannot cover it, nor those that start more
	// than the longest record's length before it.
	auto end = std::upper_bound(kernel_symbols_.begin(), kernel_symbols_.end(), address,
				    [](uint64_t a, const KernelSymbolRecord &k) { return a < k.start; });
	for (auto it = end; it != kernel_symbols_.begin();) {
		--it;
		if (address - it->start >= longest_kernel_symbol_)
			break;
		if (address >= it->end)
			continue;
		const uint64_t d = distance(*it);
		if (!best || d < best_distance || (d == best_distance && it->order > best->order)) {
			best = &*it;
			best_distance = d;
		}
	}
	return best;
}

void ProcessHistory::forget_exited(const std::function<bool(uint32_t pid)> &keep, bool ask_kept_again)
{
	const size_t from = ask_kept_again ? 0 : std::min(exited_kept_, exited_unforgotten_.size());
	auto kept_end = std::remove_if(exited_unforgotten_.begin() + from, exited_unforgotten_.end(), [&](uint32_t pid) {
		auto it = processes_.find(pid);
		if (it == processes_.end() || !it->second.exited)
			return true; // forgotten already, or its pid taken by a new process
		if (keep(pid))
			return false;
		processes_.erase(it);
		return true;
	});
	exited_unforgotten_.erase(kept_end, exited_unforgotten_.end());
	exited_kept_ = exited_unforgotten_.size();
}

void ProcessHistory::forget_kernel_symbols(uint64_t unloaded_before_ns)
{
	std::erase_if(kernel_symbols_, [&](const KernelSymbolRecord &k) { return k.until_ns < unloaded_before_ns; });
}

void ProcessHistory::settle_labels(const std::function<bool(uint32_t pid)> &sampled, uint64_t now_ns, uint64_t after_ns)
{
	std::erase_if(labels_pending_, [&](const PendingLabels &pending) {
		auto it = processes_.find(pending.pid);
		if (it == processes_.end())
			return true;
		// The image this exec began; a later exec has its own entry.
		auto &images = it->second.images;
		auto image = std::find_if(images.begin(), images.end(),
					  [&](const ProcessImage &i) { return i.since_ns == pending.exec_ns; });
		if (image == images.end())
			return true;
		const bool young = now_ns - std::min(now_ns, pending.exec_ns) < after_ns;
		if ((young || it->second.exited) && !sampled(pending.pid))
			return it->second.exited; // gone unsampled: it keeps what it had
		// Sampled (an exited one may still be readable, not yet reaped), or old enough.
		image->cgroup = cgroup_now(pending.pid, image->cgroup);
		return true;
	});
}

void snapshot_processes(ProcessHistory &history, uint64_t now_ns, const std::string &proc_root)
{
	std::unique_ptr<DIR, int (*)(DIR *)> dir(opendir(proc_root.c_str()), closedir);
	if (!dir)
		return;
	std::string text;
	while (dirent *entry = readdir(dir.get())) {
		char *end = nullptr;
		unsigned long pid = std::strtoul(entry->d_name, &end, 10);
		if (!pid || *end || pid > UINT32_MAX)
			continue;
		const std::string base = proc_root + "/" + entry->d_name;
		if (!read_whole_file((base + "/maps").c_str(), text))
			continue; // gone already, or a kernel thread with nothing to read
		const ProcessMaps maps = ProcessMaps::parse(text);
		std::vector<MapEntry> executable;
		for (const MapEntry &m : maps.entries())
			if (m.executable())
				executable.push_back(m);
		std::string comm;
		if (read_whole_file((base + "/comm").c_str(), comm) && !comm.empty() && comm.back() == '\n')
			comm.pop_back();
		history.add_snapshot(uint32_t(pid), std::move(comm), std::move(executable), now_ns);
	}
}

