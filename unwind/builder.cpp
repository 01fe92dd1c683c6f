// unwind/builder.cpp: builds the unwind table of each object asked for, on a thread of its
// own (from the cache when it is there), and loads the tables built into the kernel.
#include "unwind/builder.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "elf/debug_file.h"
#include "elf/elf.h"
#include "unwind/cache.h"
#include "unwind/pruner.h"

void set_object_state(const UnwindMaps &maps, uint32_t object, uint32_t state)
{
	unwind_object value{0, state, 0, 0};
	bpf_map_update_elem(maps.objects, &object, &value, BPF_ANY);
}

TableBuilder::TableBuilder(const UnwindMaps &maps, std::string cache_dir, CachePruner &pruner, bool debug)
	: maps_(maps), cache_dir_(std::move(cache_dir)), pruner_(pruner), debug_(debug)
{
	host_root_.reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
	thread_ = std::thread([this] { loop(); });
}

TableBuilder::~TableBuilder()
{
	stop();
}

void TableBuilder::queue(TableJob job)
{
	set_object_state(maps_, job.object, UNWIND_OBJECT_BUILDING);
	std::lock_guard<std::mutex> guard(queue_lock_);
	if (!first_asked_ms_)
		first_asked_ms_ = clocks::monotonic_ms();
	jobs_.push_back(std::move(job));
	building_++;
	work_.notify_one();
}

void TableBuilder::wait_idle(int timeout_ms)
{
	std::unique_lock<std::mutex> guard(queue_lock_);
	finished_.wait_for(guard, std::chrono::milliseconds(timeout_ms), [&] { return building_ == 0; });
}

void TableBuilder::stop()
{
	{
		std::lock_guard<std::mutex> guard(queue_lock_);
		stopping_ = true;
		work_.notify_one();
	}
	if (thread_.joinable()) {
		thread_.join();
		load_built();
	}
}

// The table of the job's file: from the cache, else compiled (with its separate debug
// file's .debug_frame when the file has no CFI of its own) and, while stores are on, cached.
TableBuilder::Built TableBuilder::build(TableJob &job)
{
	Built built;
	built.object = job.object;
	if (!job.image.empty()) {
		built.table = compile_unwind_table(job.image, {});
		return built;
	}
	const std::string key = cache_dir_.empty() ? "" : unwind_table_key(job.fd.get());
	if (!key.empty()) {
		Result<std::optional<UnwindTable>> cached = load_cached_unwind_table(cache_dir_, key);
		if (cached.ok() && *cached) {
			built.table = std::move(*cached);
			built.from_cache = true;
			return built;
		}
		built.loaded = cached.status();
	}
	built.table = compile_unwind_table(job.fd.get());
	if (built.table && built.table->rows.empty()) {
		if (std::unique_ptr<ElfFile> elf = ElfFile::open(job.fd.get()))
			if (std::optional<DebugFile> debug =
				    find_debug_file(*elf, job.path, "/usr/lib/debug", host_root_.get(), false))
				built.table = compile_unwind_table(job.fd.get(), debug->fd.get());
	}
	struct stat st, at_path;
	if (built.table && !key.empty() && !pruner_.stores_off() && fstat(job.fd.get(), &st) == 0) {
		// The path goes in the file only when it names this file here, on the host: pruning
		// drops the entry once it no longer does. A container's path (another mount
		// namespace) would name another file or none.
		const bool here = stat(job.path.c_str(), &at_path) == 0 && at_path.st_dev == st.st_dev &&
				  at_path.st_ino == st.st_ino;
		built.stored =
			store_unwind_table(cache_dir_, key, *built.table, unwind_cache_origin(here ? job.path : "", st));
	}
	return built;
}

// Puts a built table's rows into an array of its own in the kernel: the array, or none
// when the table is empty, over the cap, or cannot be made (its object's state is set).
// Called with loading_ held.
UniqueFd TableBuilder::fill(Built &built)
{
	if (!built.table || built.table->rows.empty()) {
		set_object_state(maps_, built.object, UNWIND_OBJECT_NO_TABLE);
		loaded_.no_table++;
		return {};
	}
	const std::vector<unwind_row> &rows = built.table->rows;
	const std::vector<unwind_page> pages = unwind_page_index(rows);
	const size_t slots = rows.size() + pages.size();
	const size_t chunks = (slots + UNWIND_CHUNK_SLOTS - 1) / UNWIND_CHUNK_SLOTS;
	static_assert(sizeof(unwind_page) == sizeof(unwind_row) && sizeof(unwind_slot) == sizeof(unwind_row));
	LIBBPF_OPTS(bpf_map_create_opts, create, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	UniqueFd table;
	if (slots <= maps_.row_capacity - loaded_.rows && chunks <= UINT32_MAX)
		table.reset(bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", sizeof(uint32_t), sizeof(unwind_chunk),
					   uint32_t(chunks), &create));
	if (!table) {
		set_object_state(maps_, built.object, UNWIND_OBJECT_NO_ROOM);
		loaded_.no_room++;
		loaded_.no_room_rows += rows.size();
		return {};
	}
	// Written through a mapping of the array, where its chunks are one flat run of slots:
	// a copy, where updates cost a syscall a batch and a copy a chunk. The rows, then their
	// page index.
	const size_t bytes = chunks * sizeof(unwind_chunk);
	void *at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, table.get(), 0);
	if (at == MAP_FAILED) {
		set_object_state(maps_, built.object, UNWIND_OBJECT_NO_TABLE);
		loaded_.no_table++;
		return {};
	}
	std::memcpy(at, rows.data(), rows.size() * sizeof(unwind_row));
	std::memcpy(static_cast<unwind_row *>(at) + rows.size(), pages.data(), pages.size() * sizeof(unwind_page));
	munmap(at, bytes);
	built.pages = uint32_t(pages.size());
	built.page_base = rows.front().pc >> UNWIND_PAGE_SHIFT;
	loaded_.rows += pages.size();
	loaded_.rows += rows.size();
	return table;
}

// Loads the tables built since the last call, then marks their objects ready: the walk reads
// no row of one before. Every update of a map of maps waits for an RCU grace period
// (programs still running must be done with the old inner map): one batch waits once.
void TableBuilder::load_built()
{
	std::lock_guard<std::mutex> loading(loading_);
	std::vector<Built> built;
	{
		std::lock_guard<std::mutex> guard(queue_lock_);
		built.swap(done_);
	}
	std::vector<uint32_t> objects;
	std::vector<UniqueFd> tables;
	std::vector<int> fds;
	std::vector<unwind_object> states;
	for (Built &b : built)
		if (UniqueFd table = fill(b)) {
			objects.push_back(b.object);
			fds.push_back(table.get());
			states.push_back({uint32_t(b.table->rows.size()), UNWIND_OBJECT_READY, b.page_base, b.pages});
			loaded_.from_cache += b.from_cache;
			tables.push_back(std::move(table));
		}
	if (objects.empty())
		return;
	uint32_t count = uint32_t(objects.size());
	bool in = bpf_map_update_batch(maps_.tables, objects.data(), fds.data(), &count, nullptr) == 0;
	for (size_t i = 0; i < objects.size(); i++) {
		if (!in)
			in = bpf_map_update_elem(maps_.tables, &objects[i], &fds[i], BPF_ANY) == 0;
		if (in) {
			bpf_map_update_elem(maps_.objects, &objects[i], &states[i], BPF_ANY);
			loaded_.ready++;
		} else {
			set_object_state(maps_, objects[i], UNWIND_OBJECT_NO_TABLE);
			loaded_.no_table++;
			loaded_.rows -= states[i].row_count + states[i].page_count;
		}
		in = in && count == objects.size();
	}
}

void TableBuilder::loop()
{
	while (true) {
		TableJob job;
		{
			std::unique_lock<std::mutex> guard(queue_lock_);
			work_.wait(guard, [&] { return stopping_ || !jobs_.empty(); });
			if (stopping_)
				break;
			// The smallest file first: a compiler's table takes a second or two the first
			// time, and the libraries a new process runs in should not wait behind it.
			auto smallest = std::min_element(jobs_.begin(), jobs_.end(),
							 [](const TableJob &a, const TableJob &b) { return a.size < b.size; });
			job = std::move(*smallest);
			jobs_.erase(smallest);
		}
		const double cpu_before = clocks::thread_cpu_ms();
		Built built = build(job);
		if (!built.loaded.ok())
			diagnostics::say("warning: unwind cache: %s; built again", built.loaded.error().c_str());
		if (!built.stored.ok())
			pruner_.not_written(built.stored.error());
		if (debug_)
			diagnostics::say("unwind table of %s: %zu rows%s, %.1f ms of CPU", job.path.c_str(),
				built.table ? built.table->rows.size() : 0, built.from_cache ? " from the cache" : "",
				clocks::thread_cpu_ms() - cpu_before);
		bool idle;
		{
			std::lock_guard<std::mutex> guard(queue_lock_);
			done_.push_back(std::move(built));
			last_built_ms_ = clocks::monotonic_ms();
			build_cpu_ms_ = clocks::thread_cpu_ms();
			building_--;
			idle = jobs_.empty();
			finished_.notify_all();
		}
		// Nothing else queued: what was built goes in now, not at the next tick (a new
		// binary's stacks are truncated until it does).
		if (idle)
			load_built();
	}
	std::lock_guard<std::mutex> guard(queue_lock_);
	build_cpu_ms_ = clocks::thread_cpu_ms();
}

TableBuilder::Stats TableBuilder::stats() const
{
	Stats s;
	{
		std::lock_guard<std::mutex> loading(loading_);
		s = loaded_;
	}
	std::lock_guard<std::mutex> guard(queue_lock_);
	s.build_cpu_ms = build_cpu_ms_;
	s.build_wall_ms = first_asked_ms_ ? last_built_ms_ - first_asked_ms_ : 0;
	return s;
}
