// unwind/unwinder.cpp: feeds the BPF table walk: processes' mappings from the history,
// objects' tables built (or read from the cache) on a thread of its own.
#include "unwind/unwinder.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "base/diagnostics.h"
#include "syms/debug_file.h"
#include "syms/elf.h"
#include "base/fd.h"
#include "syms/process_history.h"
#include "unwind/cache.h"
#include "unwind/table.h"

namespace {

double thread_cpu_ms()
{
	timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double monotonic_ms()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// A file, as mappings name it: its device and inode.
using FileKey = std::tuple<uint32_t, uint32_t, uint64_t>;

FileKey file_key(const MapEntry &m)
{
	return {m.dev_major, m.dev_minor, m.inode};
}

bool is_vdso(const MapEntry &m)
{
	return m.path == "[vdso]";
}

// A mapping as the walk knows its file: the vDSO by the identity the kernel gives it
// (UNWIND_VDSO_INODE, its size in pages as the device); others as they are.
MapEntry walk_identity(MapEntry m)
{
	if (is_vdso(m)) {
		m.inode = UNWIND_VDSO_INODE;
		m.dev_major = 0;
		m.dev_minor = uint32_t((m.end - m.start) >> 12);
		m.offset = 0;
	}
	return m;
}

// Whether the walk can have a table for the mapping's code: a file's, or the vDSO's.
bool has_table(const MapEntry &m)
{
	return (m.file_backed() || is_vdso(m)) && m.offset <= UINT32_MAX;
}

// A table to build: the file, opened while a process mapped it, or the image of the vDSO.
struct Job {
	uint32_t object;
	UniqueFd fd;
	std::string path;  // as mapped: where its separate debug file is looked for
	uint64_t size = 0; // of the file: small ones first
	std::vector<uint8_t> image; // the vDSO's (no fd, not cached)
};

struct Built {
	uint32_t object = 0;
	std::optional<UnwindTable> table;
	bool from_cache = false;
	uint32_t page_base = 0, pages = 0; // its page index, once in the kernel
	Status loaded;        // not ok: a cache file that did not check out, and why
	Status stored;        // not ok: why the table could not be cached
};

// The table of the file at fd: from the cache, else compiled (with its separate debug
// file's .debug_frame when the file has no CFI of its own) and, when store is set, cached.
Built build(Job &job, const std::string &cache_dir, bool store, int host_root)
{
	Built built;
	built.object = job.object;
	if (!job.image.empty()) {
		built.table = compile_unwind_table(job.image, {});
		return built;
	}
	const std::string key = cache_dir.empty() ? "" : unwind_table_key(job.fd.get());
	if (!key.empty()) {
		Result<std::optional<UnwindTable>> cached = load_cached_unwind_table(cache_dir, key);
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
				    find_debug_file(*elf, job.path, "/usr/lib/debug", host_root, false))
				built.table = compile_unwind_table(job.fd.get(), debug->fd.get());
	}
	struct stat st, at_path;
	if (built.table && !key.empty() && store && fstat(job.fd.get(), &st) == 0) {
		// The path goes in the file only when it names this file here, on the host: pruning
		// drops the entry once it no longer does. A container's path (another mount
		// namespace) would name another file or none.
		const bool here = stat(job.path.c_str(), &at_path) == 0 && at_path.st_dev == st.st_dev &&
				  at_path.st_ino == st.st_ino;
		built.stored =
			store_unwind_table(cache_dir, key, *built.table, unwind_cache_origin(here ? job.path : "", st));
	}
	return built;
}

} // namespace

struct Unwinder::Impl {
	UnwindMaps maps;
	std::string cache_dir;
	uint64_t cache_max_bytes = kDefaultUnwindCacheBytes;
	const bool debug = getenv("PROFILE_DEBUG") != nullptr;
	UniqueFd host_root;

	struct Object {
		MapEntry mapping; // a mapping of it: path, device and inode
		uint32_t pid = 0; // the last process seen mapping it (its map_files open it)
		bool asked = false;
	};
	std::vector<Object> objects{Object{}}; // [0]: none
	std::map<FileKey, uint32_t> object_ids;

	// Where the kernel does not follow processes itself: the mappings each process's walk
	// has, as the history held them when sent (null: sent with none, the history never knew it).
	std::unordered_map<uint32_t, std::shared_ptr<const std::vector<MapEntry>>> sent;
	std::unordered_map<uint32_t, uint32_t> unknown_ticks; // asked about, not in the history yet

	// The builder thread and what passes between it and tick().
	std::mutex lock;
	// Held while tables go into the kernel and while stats change: the builder loads what
	// it built as soon as it has nothing else to do, the run's thread at its ticks.
	mutable std::mutex loading;
	std::condition_variable work, finished;
	std::deque<Job> jobs;
	size_t building = 0; // jobs queued or under way
	std::vector<Built> done;
	bool stopping = false;
	double build_cpu_ms = 0;
	double first_asked_ms = 0, last_built_ms = 0;
	std::thread builder;

	// The cache: pruned on a thread of its own, at start and hourly after, so that neither
	// sampling nor the tables wait for it. One line on stderr, the first time it cannot be
	// written; no more stores after that. At nice 19 it may get no CPU at all while the
	// machine is busy, so the end of the run does not wait for a prune under way: it is told
	// to stop (between files) and raised back to the process's priority for that.
	std::atomic<bool> cache_warned{false}, cache_stores_off{false};
	std::thread pruner;
	std::atomic<pid_t> pruner_tid{0};
	std::mutex prune_lock;
	std::condition_variable prune_wake;
	std::atomic<bool> prune_stopping{false};

	Stats stats;

	// The kernel's rows of objects raw stacks were walked through, mapped read-only from
	// their arrays (object -> mapping): the rows the kernel walk reads, no second copy.
	struct MappedRows {
		MappedFile memory;
		std::span<const unwind_row> rows; // empty: the array could not be mapped
	};
	std::unordered_map<uint32_t, MappedRows> mapped_rows;
	CodeRows code_rows(const MapEntry &m, uint64_t address);

	void cache_not_written(const std::string &why);
	void prune_loop();

	uint32_t object_of(uint32_t pid, const MapEntry &m);
	void send_process(uint32_t pid, const ProcessImage *image, uint64_t flags);
	void answer_file(const unwind_file &file, const unwind_file_seen &seen, const ProcessHistory &history);
	void ask(uint32_t object);
	void queue(Job job);
	UniqueFd fill(Built &built);
	void set_state(uint32_t object, uint32_t state);
	void build_loop();
	void load_built();
};

// The kernel's encoding of a device number (MKDEV), as struct super_block's s_dev holds it.
uint32_t kernel_dev(const MapEntry &m)
{
	return m.dev_major << 20 | m.dev_minor;
}

uint32_t Unwinder::Impl::object_of(uint32_t pid, const MapEntry &m)
{
	if (!has_table(m) || objects.size() >= maps.object_capacity)
		return 0;
	auto [it, inserted] = object_ids.try_emplace(file_key(m), uint32_t(objects.size()));
	if (inserted) {
		objects.push_back({m, pid});
		set_state(it->second, UNWIND_OBJECT_BUILDING);
		// From now on the walk finds the file's object wherever it is mapped.
		unwind_file file{m.inode, kernel_dev(m), 0};
		bpf_map_update_elem(maps.files, &file, &it->second, BPF_ANY);
	} else {
		objects[it->second].pid = pid;
		objects[it->second].mapping = m;
	}
	return it->second;
}

void Unwinder::Impl::send_process(uint32_t pid, const ProcessImage *image, uint64_t flags)
{
	unwind_process value{};
	if (image && image->maps) {
		for (const MapEntry &m : *image->maps) {
			if (!m.executable())
				continue;
			if (value.count == UNWIND_MAX_MAPPINGS) {
				std::lock_guard<std::mutex> counting(loading);
				stats.dropped_mappings++;
				continue;
			}
			unwind_mapping &out = value.mappings[value.count++];
			out.start = m.start;
			out.end = m.end;
			if (!has_table(m))
				continue; // no file: frame pointers
			const MapEntry known = walk_identity(m);
			out.offset = uint32_t(known.offset);
			out.inode = known.inode;
			out.dev = kernel_dev(known);
			// A sampled process will run code of most objects it maps: their tables are
			// asked for now rather than each at its first sample, a round trip later.
			if (uint32_t object = object_of(pid, known))
				ask(object);
		}
	}
	// Followed by user space only where the kernel cannot follow it.
	if (!maps.kernel_follows)
		sent[pid] = image ? image->maps : nullptr;
	if (bpf_map_update_elem(maps.processes, &pid, &value, flags) == 0 && value.count) {
		std::lock_guard<std::mutex> counting(loading);
		stats.processes++;
	}
}

// A file the walk met with no object: opened through the mapping the kernel saw it in.
void Unwinder::Impl::answer_file(const unwind_file &file, const unwind_file_seen &seen, const ProcessHistory &history)
{
	if (file.inode == UNWIND_VDSO_INODE) {
		MapEntry vdso;
		vdso.start = seen.start;
		vdso.end = seen.end;
		vdso.path = "[vdso]";
		if (uint32_t object = object_of(seen.pid, walk_identity(vdso)))
			ask(object);
		return;
	}
	char range[96];
	std::snprintf(range, sizeof(range), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, seen.pid, uint64_t(seen.start),
		      uint64_t(seen.end));
	MapEntry m;
	m.start = seen.start;
	m.end = seen.end;
	m.inode = file.inode;
	m.dev_major = file.dev >> 20;
	m.dev_minor = file.dev & 0xfffff;
	m.perms = {'r', '-', 'x', 'p'};
	char path[4096];
	const ssize_t length = readlink(range, path, sizeof(path) - 1);
	if (length > 0) {
		m.path.assign(path, size_t(length));
		if (m.path.size() > 10 && m.path.compare(m.path.size() - 10, 10, " (deleted)") == 0) {
			m.path.resize(m.path.size() - 10);
			m.deleted = true;
		}
	} else {
		// Gone already: in a build most processes live milliseconds, less than a tick, and
		// asking each next one of the same program would never get its file. The path is
		// in the history's records of the mapping; ask() opens it if it is still that file.
		// A file deleted or replaced since is not there by its path: a live process that
		// maps it must ask (else its object would be marked as having no table for good).
		const ProcessImage *image = history.image_at(seen.pid, UINT64_MAX);
		const MapEntry *known = image ? image->find(seen.start) : nullptr;
		struct stat st;
		if (!known || known->inode != file.inode || kernel_dev(*known) != file.dev ||
		    stat(known->path.c_str(), &st) != 0 || st.st_ino != file.inode ||
		    major(st.st_dev) != known->dev_major || minor(st.st_dev) != known->dev_minor)
			return; // the walk asks again if another process maps it
		m.path = known->path;
	}
	if (uint32_t object = object_of(seen.pid, m))
		ask(object);
}

void Unwinder::Impl::set_state(uint32_t object, uint32_t state)
{
	unwind_object value{0, state, 0, 0};
	bpf_map_update_elem(maps.objects, &object, &value, BPF_ANY);
}

// Opens the object's file while a process maps it (through its map_files: a deleted file,
// another mount namespace) or by its path if that is still the file mapped, and queues it.
void Unwinder::Impl::ask(uint32_t object)
{
	Object &o = objects[object];
	if (o.asked)
		return;
	o.asked = true;
	std::unique_lock<std::mutex> counting(loading);
	stats.objects++;
	if (is_vdso(o.mapping)) {
		// The vDSO of this process, when the process's is the same size (a 32-bit
		// process maps another).
		std::vector<uint8_t> image = own_vdso_image();
		if (image.size() != o.mapping.end - o.mapping.start) {
			set_state(object, UNWIND_OBJECT_NO_TABLE);
			stats.no_table++;
			return;
		}
		counting.unlock();
		queue({object, UniqueFd(), o.mapping.path, image.size(), std::move(image)});
		return;
	}
	char range[96];
	std::snprintf(range, sizeof(range), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, o.pid, o.mapping.start,
		      o.mapping.end);
	UniqueFd fd(open(range, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
	if (fd && !same_file(fd.get(), o.mapping))
		fd.reset();
	if (!fd) {
		fd.reset(open(o.mapping.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
		if (fd && !same_file(fd.get(), o.mapping))
			fd.reset();
	}
	if (!fd) {
		set_state(object, UNWIND_OBJECT_NO_TABLE);
		stats.no_table++;
		return;
	}
	counting.unlock();
	struct stat st;
	const uint64_t size = fstat(fd.get(), &st) == 0 ? uint64_t(st.st_size) : 0;
	queue({object, std::move(fd), o.mapping.path, size, {}});
}

void Unwinder::Impl::queue(Job job)
{
	set_state(job.object, UNWIND_OBJECT_BUILDING);
	std::lock_guard<std::mutex> guard(lock);
	if (!first_asked_ms)
		first_asked_ms = monotonic_ms();
	jobs.push_back(std::move(job));
	building++;
	work.notify_one();
}

// Puts a built table's rows into an array of its own in the kernel: the array, or none
// when the table is empty, over the cap, or cannot be made (its object's state is set).
UniqueFd Unwinder::Impl::fill(Built &built)
{
	if (!built.table || built.table->rows.empty()) {
		set_state(built.object, UNWIND_OBJECT_NO_TABLE);
		stats.no_table++;
		return {};
	}
	const std::vector<unwind_row> &rows = built.table->rows;
	const std::vector<unwind_page> pages = unwind_page_index(rows);
	const size_t slots = rows.size() + pages.size();
	const size_t chunks = (slots + UNWIND_CHUNK_SLOTS - 1) / UNWIND_CHUNK_SLOTS;
	static_assert(sizeof(unwind_page) == sizeof(unwind_row) && sizeof(unwind_slot) == sizeof(unwind_row));
	LIBBPF_OPTS(bpf_map_create_opts, create, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	UniqueFd table;
	if (slots <= maps.row_capacity - stats.rows && chunks <= UINT32_MAX)
		table.reset(bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", sizeof(uint32_t), sizeof(unwind_chunk),
					   uint32_t(chunks), &create));
	if (!table) {
		set_state(built.object, UNWIND_OBJECT_NO_ROOM);
		stats.no_room++;
		stats.no_room_rows += rows.size();
		return {};
	}
	// Written through a mapping of the array, where its chunks are one flat run of slots:
	// a copy, where updates cost a syscall a batch and a copy a chunk. The rows, then their
	// page index.
	const size_t bytes = chunks * sizeof(unwind_chunk);
	void *at = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, table.get(), 0);
	if (at == MAP_FAILED) {
		set_state(built.object, UNWIND_OBJECT_NO_TABLE);
		stats.no_table++;
		return {};
	}
	std::memcpy(at, rows.data(), rows.size() * sizeof(unwind_row));
	std::memcpy(static_cast<unwind_row *>(at) + rows.size(), pages.data(), pages.size() * sizeof(unwind_page));
	munmap(at, bytes);
	built.pages = uint32_t(pages.size());
	built.page_base = rows.front().pc >> UNWIND_PAGE_SHIFT;
	stats.rows += pages.size();
	stats.rows += rows.size();
	return table;
}

// Loads the tables built since the last call, then marks their objects ready: the walk reads
// no row of one before. Every update of a map of maps waits for an RCU grace period
// (programs still running must be done with the old inner map): one batch waits once.
void Unwinder::Impl::load_built()
{
	std::lock_guard<std::mutex> counting(loading);
	std::vector<Built> built;
	{
		std::lock_guard<std::mutex> guard(lock);
		built.swap(done);
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
			stats.from_cache += b.from_cache;
			tables.push_back(std::move(table));
		}
	if (objects.empty())
		return;
	uint32_t count = uint32_t(objects.size());
	bool in = bpf_map_update_batch(maps.tables, objects.data(), fds.data(), &count, nullptr) == 0;
	for (size_t i = 0; i < objects.size(); i++) {
		if (!in)
			in = bpf_map_update_elem(maps.tables, &objects[i], &fds[i], BPF_ANY) == 0;
		if (in) {
			bpf_map_update_elem(maps.objects, &objects[i], &states[i], BPF_ANY);
			stats.ready++;
		} else {
			set_state(objects[i], UNWIND_OBJECT_NO_TABLE);
			stats.no_table++;
			stats.rows -= states[i].row_count + states[i].page_count;
		}
		in = in && count == objects.size();
	}
}

void Unwinder::Impl::build_loop()
{
	while (true) {
		Job job;
		{
			std::unique_lock<std::mutex> guard(lock);
			work.wait(guard, [&] { return stopping || !jobs.empty(); });
			if (stopping)
				break;
			// The smallest file first: a compiler's table takes a second or two the first
			// time, and the libraries a new process runs in should not wait behind it.
			auto smallest = std::min_element(jobs.begin(), jobs.end(),
							 [](const Job &a, const Job &b) { return a.size < b.size; });
			job = std::move(*smallest);
			jobs.erase(smallest);
		}
		const double cpu_before = thread_cpu_ms();
		Built built = build(job, cache_dir, !cache_stores_off, host_root.get());
		if (!built.loaded.ok())
			diagnostics::say("warning: unwind cache: %s; built again", built.loaded.error().c_str());
		if (!built.stored.ok())
			cache_not_written(built.stored.error());
		if (debug)
			diagnostics::say("unwind table of %s: %zu rows%s, %.1f ms of CPU", job.path.c_str(),
				built.table ? built.table->rows.size() : 0, built.from_cache ? " from the cache" : "",
				thread_cpu_ms() - cpu_before);
		bool idle;
		{
			std::lock_guard<std::mutex> guard(lock);
			done.push_back(std::move(built));
			last_built_ms = monotonic_ms();
			build_cpu_ms = thread_cpu_ms();
			building--;
			idle = jobs.empty();
			finished.notify_all();
		}
		// Nothing else queued: what was built goes in now, not at the next tick (a new
		// binary's stacks are truncated until it does).
		if (idle)
			load_built();
	}
	std::lock_guard<std::mutex> guard(lock);
	build_cpu_ms = thread_cpu_ms();
}

void Unwinder::Impl::cache_not_written(const std::string &why)
{
	cache_stores_off = true;
	if (!cache_warned.exchange(true))
		diagnostics::say("warning: unwind tables are not cached: %s", why.c_str());
}

void Unwinder::Impl::prune_loop()
{
	// Below the builder and everything else (nice is per thread on Linux): pruning can wait.
	pruner_tid = gettid();
	setpriority(PRIO_PROCESS, id_t(gettid()), 19);
	std::unique_lock<std::mutex> guard(prune_lock);
	while (!prune_stopping) {
		guard.unlock();
		const double start_ms = monotonic_ms();
		UnwindCachePrune pruned = prune_unwind_cache(cache_dir, cache_max_bytes, &prune_stopping);
		if (!pruned.status.ok())
			cache_not_written(pruned.status.error());
		if (debug && pruned.stopped)
			diagnostics::say("unwind cache %s: prune stopped at the end of the run", cache_dir.c_str());
		else if (debug)
			diagnostics::say("unwind cache %s: %u tables kept (%.1f MiB), removed %u of files gone, %u "
				"least recently used, %u temporary, %u bad; %.1f ms",
				cache_dir.c_str(), pruned.kept, double(pruned.kept_bytes) / (1 << 20), pruned.stale,
				pruned.evicted, pruned.temporary, pruned.bad, monotonic_ms() - start_ms);
		guard.lock();
		prune_wake.wait_for(guard, std::chrono::hours(1), [&] { return prune_stopping.load(); });
	}
}

Unwinder::Unwinder(const UnwindMaps &maps, std::string cache_dir, uint64_t cache_max_bytes)
	: impl_(std::make_unique<Impl>())
{
	impl_->maps = maps;
	impl_->cache_dir = std::move(cache_dir);
	impl_->cache_max_bytes = cache_max_bytes;
	if (!impl_->cache_dir.empty())
		impl_->pruner = std::thread([this] { impl_->prune_loop(); });
	impl_->host_root.reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
	impl_->stats.row_capacity = maps.row_capacity;
	impl_->builder = std::thread([this] { impl_->build_loop(); });
}

Unwinder::~Unwinder()
{
	stop();
}

void Unwinder::stop()
{
	Impl &d = *impl_;
	{
		std::lock_guard<std::mutex> guard(d.lock);
		d.stopping = true;
		d.work.notify_one();
	}
	{
		std::lock_guard<std::mutex> guard(d.prune_lock);
		d.prune_stopping = true;
		d.prune_wake.notify_one();
	}
	// A prune under way stops at its next file; at nice 19 on a busy machine it might not
	// get there for as long as the machine stays busy, so it gets this thread's priority
	// back (allowed to root; otherwise it stays low, and stops all the same).
	if (const pid_t tid = d.pruner_tid.load())
		setpriority(PRIO_PROCESS, id_t(tid), getpriority(PRIO_PROCESS, id_t(gettid())));
	if (d.builder.joinable()) {
		d.builder.join();
		d.load_built();
	}
	if (d.pruner.joinable())
		d.pruner.join();
}

void Unwinder::prepare(const ProcessHistory &history, const std::vector<uint32_t> &pids)
{
	Impl &d = *impl_;
	// The processes running now: those of -p, or every one the snapshot found. A process
	// the kernel has followed since its exec has a list already, newer than the snapshot.
	for (uint32_t pid : pids.empty() ? history.live_pids() : pids) {
		const ProcessImage *image = history.image_at(pid, UINT64_MAX);
		if (!image)
			continue;
		d.send_process(pid, image, BPF_NOEXIST);
	}
	// Their first samples are whole if their tables are in before sampling starts. A table
	// that takes longer (seconds, for a compiler's hundreds of thousands of rows, the first
	// time) comes in while sampling goes on.
	{
		std::unique_lock<std::mutex> guard(d.lock);
		d.finished.wait_for(guard, std::chrono::seconds(2), [&] { return d.building == 0; });
	}
	d.load_built();
}

void Unwinder::tick(const ProcessHistory &history)
{
	Impl &d = *impl_;
	// Where the kernel cannot follow processes itself: processes whose mappings changed
	// since they were sent (mmap, exec), or that exited.
	for (auto it = d.sent.begin(); it != d.sent.end();) {
		const uint32_t pid = it->first;
		const ProcessImage *image = history.exited(pid) ? nullptr : history.image_at(pid, UINT64_MAX);
		// One sent with no mappings is forgotten once it is gone from /proc.
		const bool gone = it->second ? !image : kill(pid_t(pid), 0) != 0 && errno == ESRCH;
		if (gone) {
			bpf_map_delete_elem(d.maps.processes, &pid);
			it = d.sent.erase(it);
			continue;
		}
		if (image && image->maps != it->second)
			d.send_process(pid, image, BPF_ANY);
		++it;
	}

	// Processes the walk met without their mappings (or with a leaf outside them). One the
	// history does not know yet (its records are still on their way) is asked about again
	// for ten ticks (200 ms); then it is sent with none, and stacks of it take
	// frame-pointer steps.
	uint32_t pid, next;
	std::vector<uint32_t> answered;
	for (void *prev = nullptr; bpf_map_get_next_key(d.maps.wanted_processes, prev, &next) == 0; prev = &pid) {
		pid = next;
		const ProcessImage *image = history.image_at(pid, UINT64_MAX);
		if (image || ++d.unknown_ticks[pid] > 10) {
			d.send_process(pid, image, BPF_ANY);
			d.unknown_ticks.erase(pid);
			answered.push_back(pid);
		}
	}
	for (uint32_t done : answered)
		bpf_map_delete_elem(d.maps.wanted_processes, &done);

	// Files the walk met with no table: each gets its object, and its table is built.
	unwind_file file, next_file;
	std::vector<unwind_file> files;
	for (void *prev = nullptr; bpf_map_get_next_key(d.maps.wanted_files, prev, &next_file) == 0; prev = &file) {
		file = next_file;
		files.push_back(file);
	}
	for (const unwind_file &f : files) {
		unwind_file_seen seen;
		if (bpf_map_lookup_elem(d.maps.wanted_files, &f, &seen) == 0)
			d.answer_file(f, seen, history);
		bpf_map_delete_elem(d.maps.wanted_files, &f);
	}

	d.load_built();
}


// What the kernel walk would find for an address in mapping m: its object's rows once they
// are in, a frame-pointer step where the object has no table, nothing while it is built.
CodeRows Unwinder::Impl::code_rows(const MapEntry &mapping, uint64_t address)
{
	if (!has_table(mapping))
		return {CodeRows::FramePointers, {}, 0};
	const MapEntry m = walk_identity(mapping);
	// No object yet: the file the walk asked about is answered at the next tick.
	auto id = object_ids.find(file_key(m));
	if (id == object_ids.end())
		return {CodeRows::Building, {}, 0};
	const uint32_t object = id->second;
	unwind_object state{};
	if (bpf_map_lookup_elem(maps.objects, &object, &state) != 0)
		return {};
	if (state.state == UNWIND_OBJECT_NO_TABLE || state.state == UNWIND_OBJECT_NO_ROOM)
		return {CodeRows::FramePointers, {}, 0};
	if (state.state != UNWIND_OBJECT_READY)
		return {CodeRows::Building, {}, 0};
	auto [at, first_use] = mapped_rows.try_emplace(object);
	MappedRows &rows = at->second;
	if (first_use) {
		// The outer map gives the inner array's id; its fd maps its slots.
		uint32_t inner_id = 0;
		bpf_map_info info{};
		uint32_t info_size = sizeof(info);
		UniqueFd inner;
		if (bpf_map_lookup_elem(maps.tables, &object, &inner_id) == 0)
			inner.reset(bpf_map_get_fd_by_id(inner_id));
		if (inner && bpf_obj_get_info_by_fd(inner.get(), &info, &info_size) == 0 &&
		    uint64_t(info.max_entries) * info.value_size >= uint64_t(state.row_count) * sizeof(unwind_row))
			rows.memory = MappedFile::map_shared(inner.get(), size_t(info.max_entries) * info.value_size);
		if (!rows.memory.empty())
			rows.rows = {reinterpret_cast<const unwind_row *>(rows.memory.bytes().data()), state.row_count};
	}
	if (rows.rows.empty())
		return {};
	return {CodeRows::Rows, rows.rows, address - m.start + m.offset};
}

RawWalk Unwinder::walk_raw(uint32_t pid, uint64_t time_ns, const RawUserStack &stack, size_t max_frames,
			   const ProcessHistory &history)
{
	Impl &d = *impl_;
	const ProcessImage *image = history.image_at(pid, time_ns);
	if (!image || !image->maps)
		return {{}, true};
	const std::vector<MapEntry> &mappings = *image->maps;
	return walk_raw_stack(stack, max_frames, d.maps.frame_pointers, [&](uint64_t address) -> CodeRows {
		// Sorted by start, never overlapping: the last starting at or before the address.
		auto after = std::upper_bound(mappings.begin(), mappings.end(), address,
					      [](uint64_t a, const MapEntry &m) { return a < m.start; });
		if (after == mappings.begin() || address >= (after - 1)->end || !(after - 1)->executable())
			return {};
		std::lock_guard<std::mutex> counting(d.loading);
		return d.code_rows(*(after - 1), address);
	});
}

void Unwinder::drop_raw_rows()
{
	impl_->mapped_rows.clear();
}

Unwinder::Stats Unwinder::stats() const
{
	Impl &d = *impl_;
	Stats s;
	{
		std::lock_guard<std::mutex> counting(d.loading);
		s = d.stats;
	}
	std::lock_guard<std::mutex> guard(d.lock);
	s.build_cpu_ms = d.build_cpu_ms;
	s.build_wall_ms = d.first_asked_ms ? d.last_built_ms - d.first_asked_ms : 0;
	s.not_finished = s.objects - s.ready - s.no_table - s.no_room;
	return s;
}
