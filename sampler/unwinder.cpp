// sampler/unwinder.cpp: feeds the BPF table walk: processes' mappings from the history,
// objects' tables built (or read from the per-boot cache) on a thread of its own.
#include "sampler/unwinder.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "syms/debug_file.h"
#include "syms/elf.h"
#include "syms/fd.h"
#include "syms/process_history.h"
#include "syms/unwind_cache.h"
#include "syms/unwind_table.h"

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

// A table to build: the file, opened while a process mapped it.
struct Job {
	uint32_t object;
	UniqueFd fd;
	std::string path;  // as mapped: where its separate debug file is looked for
	uint64_t size = 0; // of the file: small ones first
};

struct Built {
	uint32_t object;
	std::optional<UnwindTable> table;
	bool from_cache = false;
};

// The table of the file at fd: from the cache, else compiled (with its separate debug
// file's .debug_frame when the file has no CFI of its own) and cached.
Built build(Job &job, const std::string &cache_dir, int host_root)
{
	Built built{job.object, std::nullopt, false};
	const std::string key = cache_dir.empty() ? "" : unwind_table_key(job.fd.get());
	if (!key.empty())
		if ((built.table = load_cached_unwind_table(cache_dir, key))) {
			built.from_cache = true;
			return built;
		}
	built.table = compile_unwind_table(job.fd.get());
	if (built.table && built.table->rows.empty()) {
		if (std::unique_ptr<ElfFile> elf = ElfFile::open(job.fd.get()))
			if (std::optional<DebugFile> debug =
				    find_debug_file(*elf, job.path, "/usr/lib/debug", host_root, false))
				built.table = compile_unwind_table(job.fd.get(), debug->fd.get());
	}
	if (built.table && !key.empty())
		store_unwind_table(cache_dir, key, *built.table);
	return built;
}

} // namespace

struct Unwinder::Impl {
	Sampler::UnwindMaps maps;
	std::string cache_dir;
	const bool debug = getenv("PROFILE_DEBUG") != nullptr;
	UniqueFd host_root;

	struct Object {
		MapEntry mapping; // a mapping of it: path, device and inode
		uint32_t pid = 0; // the last process seen mapping it (its map_files open it)
		bool asked = false;
	};
	std::vector<Object> objects{Object{}}; // [0]: none
	std::map<FileKey, uint32_t> object_ids;
	uint32_t next_row = 0;

	// The mappings each process's walk has, as the history held them when sent (null: sent
	// with none, the history never knew it).
	std::unordered_map<uint32_t, std::shared_ptr<const std::vector<MapEntry>>> sent;
	std::unordered_map<uint32_t, uint32_t> unknown_ticks; // asked about, not in the history yet

	// The builder thread and what passes between it and tick().
	std::mutex lock;
	std::condition_variable work, finished;
	std::deque<Job> jobs;
	size_t building = 0; // jobs queued or under way
	std::vector<Built> done;
	bool stopping = false;
	double build_cpu_ms = 0;
	double first_asked_ms = 0, last_built_ms = 0;
	std::thread builder;

	Stats stats;

	uint32_t object_of(uint32_t pid, const MapEntry &m);
	void send_process(uint32_t pid, const ProcessImage *image);
	void ask(uint32_t object);
	void load(Built &built);
	void set_state(uint32_t object, uint32_t state, uint32_t first_row = 0, uint32_t rows = 0);
	void build_loop();
	void load_built();
};

uint32_t Unwinder::Impl::object_of(uint32_t pid, const MapEntry &m)
{
	if (!m.file_backed() || objects.size() >= maps.object_capacity)
		return 0;
	auto [it, inserted] = object_ids.try_emplace(file_key(m), uint32_t(objects.size()));
	if (inserted) {
		objects.push_back({m, pid});
		set_state(it->second, UNWIND_OBJECT_BUILDING);
	} else {
		objects[it->second].pid = pid;
		objects[it->second].mapping = m;
	}
	return it->second;
}

void Unwinder::Impl::send_process(uint32_t pid, const ProcessImage *image)
{
	unwind_process value{};
	if (image && image->maps) {
		for (const MapEntry &m : *image->maps) {
			if (!m.executable())
				continue;
			if (value.count == UNWIND_MAX_MAPPINGS) {
				stats.dropped_mappings++;
				continue;
			}
			unwind_mapping &out = value.mappings[value.count++];
			out.start = m.start;
			out.end = m.end;
			out.offset = uint32_t(m.offset);
			out.object = m.offset > UINT32_MAX ? 0 : object_of(pid, m);
			// A sampled process will run code of most objects it maps: their tables are
			// asked for now rather than each at its first sample, a round trip later.
			if (out.object)
				ask(out.object);
		}
	}
	sent[pid] = image ? image->maps : nullptr;
	if (bpf_map_update_elem(maps.processes, &pid, &value, BPF_ANY) == 0 && value.count)
		stats.processes++;
}

void Unwinder::Impl::set_state(uint32_t object, uint32_t state, uint32_t first_row, uint32_t rows)
{
	unwind_object value{first_row, rows, state};
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
	stats.objects++;
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
	set_state(object, UNWIND_OBJECT_BUILDING);
	std::lock_guard<std::mutex> guard(lock);
	if (!first_asked_ms)
		first_asked_ms = monotonic_ms();
	struct stat st;
	const uint64_t size = fstat(fd.get(), &st) == 0 ? uint64_t(st.st_size) : 0;
	jobs.push_back({object, std::move(fd), o.mapping.path, size});
	building++;
	work.notify_one();
}

// Puts a built table's rows into the kernel's array, then marks the object ready: the
// walk reads no row of it before.
void Unwinder::Impl::load(Built &built)
{
	if (!built.table || built.table->rows.empty()) {
		set_state(built.object, UNWIND_OBJECT_NO_TABLE);
		stats.no_table++;
		return;
	}
	const std::vector<unwind_row> &rows = built.table->rows;
	if (rows.size() > maps.row_capacity - next_row) {
		set_state(built.object, UNWIND_OBJECT_NO_ROOM);
		stats.no_room++;
		stats.no_room_rows += rows.size();
		return;
	}
	std::vector<uint32_t> keys(std::min<size_t>(rows.size(), 65536));
	for (size_t first = 0; first < rows.size(); first += keys.size()) {
		uint32_t count = uint32_t(std::min(keys.size(), rows.size() - first));
		for (uint32_t i = 0; i < count; i++)
			keys[i] = next_row + uint32_t(first) + i;
		if (bpf_map_update_batch(maps.rows, keys.data(), &rows[first], &count, nullptr) != 0) {
			// Older kernels: one row at a time.
			for (uint32_t i = 0; i < count; i++)
				if (bpf_map_update_elem(maps.rows, &keys[i], &rows[first + i], BPF_ANY) != 0) {
					set_state(built.object, UNWIND_OBJECT_NO_TABLE);
					stats.no_table++;
					return;
				}
		}
	}
	set_state(built.object, UNWIND_OBJECT_READY, next_row, uint32_t(rows.size()));
	next_row += uint32_t(rows.size());
	stats.rows += rows.size();
	stats.ready++;
	stats.from_cache += built.from_cache;
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
		Built built = build(job, cache_dir, host_root.get());
		if (debug)
			fprintf(stderr, "profile: unwind table of %s: %zu rows%s, %.1f ms of CPU\n", job.path.c_str(),
				built.table ? built.table->rows.size() : 0, built.from_cache ? " from the cache" : "",
				thread_cpu_ms() - cpu_before);
		std::lock_guard<std::mutex> guard(lock);
		done.push_back(std::move(built));
		last_built_ms = monotonic_ms();
		build_cpu_ms = thread_cpu_ms();
		building--;
		finished.notify_all();
	}
	std::lock_guard<std::mutex> guard(lock);
	build_cpu_ms = thread_cpu_ms();
}

Unwinder::Unwinder(const Sampler::UnwindMaps &maps, std::string cache_dir) : impl_(std::make_unique<Impl>())
{
	impl_->maps = maps;
	impl_->cache_dir = std::move(cache_dir);
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
	if (d.builder.joinable())
		d.builder.join();
}

void Unwinder::prepare(const ProcessHistory &history, const std::vector<uint32_t> &pids)
{
	Impl &d = *impl_;
	for (uint32_t pid : pids) {
		const ProcessImage *image = history.image_at(pid, UINT64_MAX);
		if (!image)
			continue;
		d.send_process(pid, image);
	}
	// The processes are there already: their first samples are whole if their tables are
	// in before sampling starts. A table that takes longer (seconds, for a compiler's
	// hundreds of thousands of rows, the first time) comes in while sampling goes on.
	{
		std::unique_lock<std::mutex> guard(d.lock);
		d.finished.wait_for(guard, std::chrono::seconds(2), [&] { return d.building == 0; });
	}
	d.load_built();
}

void Unwinder::tick(const ProcessHistory &history)
{
	Impl &d = *impl_;
	// Processes whose mappings changed since they were sent (mmap, exec), or that exited.
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
			d.send_process(pid, image);
		++it;
	}

	// Processes the walk met without their mappings. One the history does not know yet
	// (its records are still on their way) is asked about again for ten ticks (200 ms); then
	// it is sent with none, and stacks of it take frame-pointer steps.
	uint32_t pid, next;
	std::vector<uint32_t> answered;
	for (void *prev = nullptr; bpf_map_get_next_key(d.maps.wanted_processes, prev, &next) == 0; prev = &pid) {
		pid = next;
		const ProcessImage *image = history.image_at(pid, UINT64_MAX);
		if (image || ++d.unknown_ticks[pid] > 10) {
			d.send_process(pid, image);
			d.unknown_ticks.erase(pid);
			answered.push_back(pid);
		}
	}
	for (uint32_t done : answered)
		bpf_map_delete_elem(d.maps.wanted_processes, &done);

	d.load_built();
}

void Unwinder::Impl::load_built()
{
	std::vector<Built> built;
	{
		std::lock_guard<std::mutex> guard(lock);
		built.swap(done);
	}
	for (Built &b : built)
		load(b);
}

Unwinder::Stats Unwinder::stats() const
{
	Impl &d = *impl_;
	Stats s = d.stats;
	std::lock_guard<std::mutex> guard(d.lock);
	s.build_cpu_ms = d.build_cpu_ms;
	s.build_wall_ms = d.first_asked_ms ? d.last_built_ms - d.first_asked_ms : 0;
	s.not_finished = s.objects - s.ready - s.no_table - s.no_room;
	return s;
}
