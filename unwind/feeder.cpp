// unwind/feeder.cpp: tells the BPF walk the executable mappings of the processes it samples,
// and gives each file the walk meets an object whose table the builder makes.
#include "unwind/feeder.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include "base/fd.h"
#include "proc/process_history.h"
#include "unwind/builder.h"
#include "unwind/unwind.h"

namespace {

bool is_vdso(const MapEntry &m)
{
	return m.path == "[vdso]";
}

// The kernel's encoding of a device number (MKDEV), as struct super_block's s_dev holds it.
uint32_t kernel_dev(const MapEntry &m)
{
	return m.dev_major << 20 | m.dev_minor;
}

} // namespace

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

bool has_table(const MapEntry &m)
{
	return (m.file_backed() || is_vdso(m)) && m.offset <= UINT32_MAX;
}

MappingFeeder::MappingFeeder(const UnwindMaps &maps, TableBuilder &builder) : maps_(maps), builder_(builder) {}

uint32_t MappingFeeder::object_id(const MapEntry &walk_mapping) const
{
	auto id = object_ids_.find(FileKey::of(walk_mapping));
	return id == object_ids_.end() ? 0 : id->second;
}

uint32_t MappingFeeder::object_of(uint32_t pid, const MapEntry &m)
{
	if (!has_table(m) || objects_.size() >= maps_.object_capacity)
		return 0;
	auto [it, inserted] = object_ids_.try_emplace(FileKey::of(m), uint32_t(objects_.size()));
	if (inserted) {
		objects_.push_back({m, pid});
		set_object_state(maps_, it->second, UNWIND_OBJECT_BUILDING);
		// From now on the walk finds the file's object wherever it is mapped.
		unwind_file file{m.inode, kernel_dev(m), 0};
		bpf_map_update_elem(maps_.files, &file, &it->second, BPF_ANY);
	} else {
		objects_[it->second].pid = pid;
		objects_[it->second].mapping = m;
	}
	return it->second;
}

void MappingFeeder::send_process(uint32_t pid, const ProcessImage *image, uint64_t flags)
{
	unwind_process value{};
	if (image && image->maps) {
		for (const MapEntry &m : *image->maps) {
			if (!m.executable())
				continue;
			if (value.count == UNWIND_MAX_MAPPINGS) {
				stats_.dropped_mappings++;
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
	if (!maps_.kernel_follows)
		sent_[pid] = image ? image->maps : nullptr;
	// A list sent again has a sequence of its own, even and higher: a walk that began with
	// the one it replaces, and a stack kept off the CPU from such a walk, do not trust it.
	unwind_process old{};
	if (bpf_map_lookup_elem(maps_.processes, &pid, &old) == 0)
		value.seq = (old.seq | 1) + 1;
	value.serial = UNWIND_SENT_SERIAL | next_serial_++;
	if (bpf_map_update_elem(maps_.processes, &pid, &value, flags) == 0 && value.count)
		stats_.processes++;
}

// A file the walk met with no object: opened through the mapping the kernel saw it in.
void MappingFeeder::answer_file(const unwind_file &file, const unwind_file_seen &seen,
				const ProcessHistory &history)
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
	MapEntry m;
	m.start = seen.start;
	m.end = seen.end;
	m.inode = file.inode;
	m.dev_major = file.dev >> 20;
	m.dev_minor = file.dev & 0xfffff;
	m.perms = {'r', '-', 'x', 'p'};
	char path[4096];
	const ssize_t length = readlink(map_files_path(seen.pid, seen.start, seen.end).c_str(), path, sizeof(path) - 1);
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

// Opens the object's file while a process maps it (through its map_files: a deleted file,
// another mount namespace) or by its path if that is still the file mapped, and queues it.
void MappingFeeder::ask(uint32_t object)
{
	Object &o = objects_[object];
	if (o.asked)
		return;
	o.asked = true;
	stats_.objects++;
	if (is_vdso(o.mapping)) {
		// The vDSO of this process, when the process's is the same size (a 32-bit
		// process maps another).
		std::vector<uint8_t> image = own_vdso_image();
		if (image.size() != o.mapping.end - o.mapping.start) {
			set_object_state(maps_, object, UNWIND_OBJECT_NO_TABLE);
			stats_.no_file++;
			return;
		}
		builder_.queue({object, UniqueFd(), o.mapping.path, image.size(), std::move(image)});
		return;
	}
	UniqueFd fd(open_map_file("/proc/" + std::to_string(o.pid), o.mapping.start, o.mapping.end));
	if (fd && !same_file(fd.get(), o.mapping))
		fd.reset();
	if (!fd) {
		fd.reset(open(o.mapping.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
		if (fd && !same_file(fd.get(), o.mapping))
			fd.reset();
	}
	if (!fd) {
		set_object_state(maps_, object, UNWIND_OBJECT_NO_TABLE);
		stats_.no_file++;
		return;
	}
	struct stat st;
	const uint64_t size = fstat(fd.get(), &st) == 0 ? uint64_t(st.st_size) : 0;
	builder_.queue({object, std::move(fd), o.mapping.path, size, {}});
}

void MappingFeeder::prepare(const ProcessHistory &history, const std::vector<uint32_t> &pids)
{
	// The processes running now: those of -p, or every one the snapshot found. A process
	// the kernel has followed since its exec has a list already, newer than the snapshot.
	for (uint32_t pid : pids.empty() ? history.live_pids() : pids) {
		const ProcessImage *image = history.image_at(pid, UINT64_MAX);
		if (!image)
			continue;
		send_process(pid, image, BPF_NOEXIST);
	}
}

void MappingFeeder::tick(const ProcessHistory &history)
{
	// Where the kernel cannot follow processes itself: processes whose mappings changed
	// since they were sent (mmap, exec), or that exited.
	for (auto it = sent_.begin(); it != sent_.end();) {
		const uint32_t pid = it->first;
		const ProcessImage *image = history.exited(pid) ? nullptr : history.image_at(pid, UINT64_MAX);
		// One sent with no mappings is forgotten once it is gone from /proc.
		const bool gone = it->second ? !image : kill(pid_t(pid), 0) != 0 && errno == ESRCH;
		if (gone) {
			bpf_map_delete_elem(maps_.processes, &pid);
			it = sent_.erase(it);
			continue;
		}
		if (image && image->maps != it->second)
			send_process(pid, image, BPF_ANY);
		++it;
	}

	// Processes the walk met without their mappings. One the history does not know yet
	// (its records are still on their way) is asked about again for ten ticks (200 ms);
	// then it is sent with none, and the walk learns its areas as it meets them.
	uint32_t pid, next;
	std::vector<uint32_t> answered;
	for (void *prev = nullptr; bpf_map_get_next_key(maps_.wanted_processes, prev, &next) == 0; prev = &pid) {
		pid = next;
		const ProcessImage *image = history.image_at(pid, UINT64_MAX);
		if (image || ++unknown_ticks_[pid] > 10) {
			send_process(pid, image, BPF_ANY);
			unknown_ticks_.erase(pid);
			answered.push_back(pid);
		}
	}
	for (uint32_t done : answered)
		bpf_map_delete_elem(maps_.wanted_processes, &done);

	// Files the walk met with no table: each gets its object, and its table is built.
	unwind_file file, next_file;
	std::vector<unwind_file> files;
	for (void *prev = nullptr; bpf_map_get_next_key(maps_.wanted_files, prev, &next_file) == 0; prev = &file) {
		file = next_file;
		files.push_back(file);
	}
	for (const unwind_file &f : files) {
		unwind_file_seen seen;
		if (bpf_map_lookup_elem(maps_.wanted_files, &f, &seen) == 0)
			answer_file(f, seen, history);
		bpf_map_delete_elem(maps_.wanted_files, &f);
	}
}
