// syms/symbolizer.cpp: names kernel and user addresses with the project's own resolvers.
#include "syms/symbolizer.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "syms/debug_file.h"
#include "syms/demangle.h"
#include "syms/elf.h"
#include "base/fd.h"
#include "syms/kallsyms.h"
#include "syms/kallsyms_cache.h"
#include "syms/lru_cache.h"
#include "syms/maps.h"
#include "syms/perf_map.h"
#include "syms/process_history.h"
#include "syms/source_lines.h"

namespace {

// A file some process mapped executable, and what names the addresses in it.
struct Binary {
	std::unique_ptr<ElfFile> elf;
	std::unique_ptr<ElfFile> debug;     // its separate debug file, when one was found
	ElfFile *symbols = nullptr;         // the fullest table: elf's .symtab, else debug's, else elf's .dynsym
	std::unique_ptr<SourceLines> lines; // with want_lines or want_inlined, where DWARF was found
	// Demangled names, keyed by where the raw name lies in the mapped file: each name is
	// demangled once, and only if some frame needs it. Dropped with the file.
	std::unordered_map<const char *, std::string> names;
	// Its symbols (or, with want_lines, its DWARF) are in no file here: a debug file from
	// elsewhere may still have them.
	bool wants_debug_file = false;
};

// What user addresses lie in, in terms that outlive their process: one file mapped by
// many processes, wherever each mapped it, is one object.
struct UserObject {
	enum class Kind : uint8_t {
		Unknown, // code nothing mapped, of a process gone without a perf map: "[unknown]"
		File,    // a file, named from its symbols
		Area,    // a kernel-made area: [vdso] (named from this process's own), [heap]...
		Jit,     // code no file backs, of process `pid`: its perf map may name it
	};
	Kind kind = Kind::Unknown;
	// File: the last process seen mapping it, which may still map it at the end (the way
	// to its file inside a container, or to a deleted file); Jit: the process.
	uint32_t pid = 0;
	MapEntry mapping; // File, Area: that process's mapping of it
};

// What is true of a process now, at the end of the run, as opposed to its history.
struct LiveProcess {
	bool alive = false;
	uid_t uid = 0;
	UniqueFd root; // /proc/PID/root: its files as it sees them
	bool maps_read = false;
	ProcessMaps maps; // its mappings now
	bool perf_map_read = false;
	std::optional<PerfMap> perf_map;
	std::string perf_map_path;
};

// True when both descriptors are the same directory: a process whose root is the host's.
bool same_directory(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool has_dwarf(const ElfFile &elf)
{
	return elf.has_section(".debug_info") || elf.has_section(".zdebug_info");
}

// This process's own vDSO (own_vdso_image), parsed; size: its size.
std::unique_ptr<ElfFile> read_own_vdso(uint64_t &size)
{
	std::vector<uint8_t> image = own_vdso_image();
	size = image.size();
	return image.empty() ? nullptr : ElfFile::from_bytes(std::move(image));
}

// The PID the process has in its own PID namespace (the last of /proc/PID/status's NSpid),
// the number a JIT inside a container names its perf map with.
uint32_t namespaced_pid(const std::string &pid_dir, uint32_t pid)
{
	std::string status;
	if (!read_whole_file((pid_dir + "/status").c_str(), status))
		return pid;
	size_t at = status.find("\nNSpid:");
	if (at == std::string::npos)
		return pid;
	size_t end = status.find('\n', at + 1);
	std::string line = status.substr(at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
	size_t last = line.find_last_of(" \t");
	unsigned long inner = std::strtoul(line.c_str() + (last == std::string::npos ? 0 : last + 1), nullptr, 10);
	return inner && inner <= UINT32_MAX ? uint32_t(inner) : pid;
}

// The heap a frame takes: itself and its strings past the short-string buffer.
size_t frame_bytes(const Frame &frame)
{
	size_t bytes = sizeof(Frame);
	for (const std::string *text : {&frame.name, &frame.module, &frame.build_id, &frame.source_file})
		if (text->capacity() > std::string().capacity())
			bytes += text->capacity() + 1;
	return bytes;
}

// What an LruCache entry takes beyond its value and its key's two copies (the list's and
// the map's): the list node's two links, the map node's three and its color, the map's
// iterator into the list.
constexpr size_t kLruEntryBytes = 7 * sizeof(void *);

} // namespace

struct Symbolizer::Impl {
	SymbolizerOptions options;
	SymbolizerStats stats;

	std::once_flag kernel_loaded;
	KernelSymbols kernel;
	bool kernel_complete = true; // false: the cached core kernel only

	const ProcessHistory *history = nullptr;
	ProcessHistory read_now; // processes the history does not know, from their maps now
	std::unordered_map<uint32_t, LiveProcess> live;
	UniqueFd host_root;

	// Null for a file that could not be read, so it is not tried for every frame.
	LruCache<FileKey, std::unique_ptr<Binary>> binaries;
	// The objects user addresses were located in; [0] is the Unknown one. A file's binary
	// is looked up in `binaries` when a frame in it is named.
	struct Object {
		UserObject object;
	};
	std::vector<Object> objects{Object{}};
	// (kind, device major, minor, inode or pid or [vdso] size, deleted, path) -> objects;
	// looked up without copying the path.
	using ObjectKey = std::tuple<UserObject::Kind, uint32_t, uint32_t, uint64_t, bool, std::string>;
	using ObjectLookup = std::tuple<UserObject::Kind, uint32_t, uint32_t, uint64_t, bool, std::string_view>;
	struct ObjectOrder {
		using is_transparent = void;
		static ObjectLookup view(const ObjectKey &key) { return ObjectLookup(key); }
		static const ObjectLookup &view(const ObjectLookup &key) { return key; }
		template <typename A, typename B>
		bool operator()(const A &a, const B &b) const
		{
			return view(a) < view(b);
		}
	};
	std::map<ObjectKey, uint32_t, ObjectOrder> object_ids;
	// Processes found gone without a perf map since forget_live_processes(): their
	// unmapped code is the Unknown object.
	std::unordered_set<uint32_t> gone_without_perf_map;
	bool vdso_read = false;
	uint64_t vdso_size = 0;
	Binary vdso;
	// Build ids wanted_debug_files has listed.
	std::unordered_set<std::string> asked_debug_files;
	// The debug files add_debug_file took, by build id: a file dropped from `binaries`
	// takes its own again when it is read again.
	std::unordered_map<std::string, UniqueFd> added_debug_files;
	// What user_frames named in files (options.kept_named_bytes): by device, inode, offset
	// in the file and whether it is a return address; past drop_files.
	struct NamedKey {
		uint32_t dev_major, dev_minor;
		uint64_t inode, offset;
		bool return_address;
		auto operator<=>(const NamedKey &) const = default;
	};
	struct NamedFrames {
		std::vector<Frame> frames;
		size_t bytes = 0; // what it takes, as frame_bytes counts
	};
	LruCache<NamedKey, NamedFrames> named{SIZE_MAX};
	size_t named_bytes = 0;

	std::string pid_dir(uint32_t pid) const { return options.proc_root + "/" + std::to_string(pid); }
	LiveProcess &live_process(uint32_t pid);
	const ProcessMaps &maps_now(uint32_t pid, LiveProcess &process);
	Binary *binary_of(uint32_t object);
	bool gone(uint32_t pid) const;
	uint32_t object_of(uint32_t pid, const MapEntry *mapping);
	std::unique_ptr<Binary> open_binary(uint32_t pid, const MapEntry &mapping);
	Binary *own_vdso(uint64_t size);
	const PerfMap::Symbol *jit_symbol(uint32_t pid, uint64_t address, std::string &path);
	const std::string &name_of(Binary &binary, const ElfFile::Symbol &symbol);
	void take_debug_file(Binary &binary, int fd);
	bool read_user_frames(const UserLocation &where, bool return_address, std::vector<Frame> &out);
};

LiveProcess &Symbolizer::Impl::live_process(uint32_t pid)
{
	auto [it, inserted] = live.try_emplace(pid);
	LiveProcess &process = it->second;
	if (inserted && !(history && history->exited(pid))) {
		struct stat st;
		if (stat(pid_dir(pid).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
			process.alive = true;
			process.uid = st.st_uid;
			process.root.reset(open((pid_dir(pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
		}
	}
	return process;
}

const ProcessMaps &Symbolizer::Impl::maps_now(uint32_t pid, LiveProcess &process)
{
	if (!process.maps_read && process.alive) {
		process.maps_read = true;
		if (ProcessMaps::load(pid_dir(pid) + "/maps", process.maps))
			stats.processes_read++;
		else
			process.alive = false;
	}
	return process.maps;
}

Binary *Symbolizer::Impl::binary_of(uint32_t id)
{
	const UserObject &object = objects[id].object;
	const MapEntry &mapping = object.mapping;
	if (object.kind == UserObject::Kind::Area && mapping.path == "[vdso]")
		return own_vdso(mapping.end - mapping.start);
	if (object.kind != UserObject::Kind::File)
		return nullptr;
	const FileKey key = FileKey::of(mapping);
	if (std::unique_ptr<Binary> *known = binaries.find(key))
		return known->get();
	const uint64_t dropped = binaries.dropped();
	Binary *binary = binaries.insert(key, open_binary(object.pid, mapping)).get();
	if (binary && binary->lines)
		binaries.keep_newest(std::max<size_t>(options.kept_dwarf_files, 1), [](const FileKey &, const std::unique_ptr<Binary> &b) {
			return b && b->lines;
		});
	stats.files_dropped += binaries.dropped() - dropped;
	return binary;
}

// True when pid has exited, as far as the history or /proc can tell.
bool Symbolizer::Impl::gone(uint32_t pid) const
{
	if (history && history->exited(pid))
		return true;
	struct stat st;
	return stat(pid_dir(pid).c_str(), &st) != 0;
}

std::unique_ptr<Binary> Symbolizer::Impl::open_binary(uint32_t pid, const MapEntry &mapping)
{
	// The very file mapped, while the process lives and still maps it there (even deleted,
	// even in another mount namespace); else the path inside its root; once it is gone,
	// the plain path. Either path only if it still leads to the file that was mapped.
	LiveProcess &process = live_process(pid);
	UniqueFd fd;
	int root = -1;
	if (process.alive) {
		const MapEntry *now = maps_now(pid, process).find(mapping.start);
		if (now && now->start == mapping.start && now->end == mapping.end && now->inode == mapping.inode &&
		    now->dev_major == mapping.dev_major && now->dev_minor == mapping.dev_minor) {
			fd.reset(open_map_file(pid_dir(pid), mapping.start, mapping.end));
		}
		root = process.root.get();
		if (!fd && process.root) {
			fd = open_in_root(process.root.get(), mapping.path);
			if (fd && !same_file(fd.get(), mapping))
				fd.reset();
		}
	}
	if (!host_root)
		host_root.reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (root < 0)
		root = host_root.get();
	// A process that has exited has no files or root to open, and neither has one that
	// exited but is not reaped (a zombie: its /proc/PID is there, empty).
	if (!process.alive || (!fd && !process.root)) {
		fd.reset(open(mapping.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
		if (fd && !same_file(fd.get(), mapping))
			fd.reset();
	}
	if (!fd)
		return nullptr;
	auto binary = std::make_unique<Binary>();
	binary->elf = ElfFile::open(fd.get());
	if (!binary->elf)
		return nullptr;
	stats.elf_files_parsed++;

	// A stripped file's full symbol table, and its DWARF, are in its separate debug file.
	const bool own_symtab = binary->elf->has_section(".symtab"), own_dwarf = has_dwarf(*binary->elf);
	std::optional<DebugFile> debug;
	const bool want_dwarf = options.wants_dwarf();
	if (!own_symtab || (want_dwarf && !own_dwarf)) {
		debug = find_debug_file(*binary->elf, mapping.path, options.debug_root, root, false);
		// The host's debug files serve a container's binaries too when the build id,
		// which names the very build, says they are the same.
		if (!debug && root != host_root.get() && !same_directory(root, host_root.get()))
			debug = find_debug_file(*binary->elf, mapping.path, options.debug_root, host_root.get(), true);
		if (debug)
			stats.debug_files_read++;
	}
	binary->symbols = binary->elf.get();
	if (debug && !own_symtab && debug->elf->has_section(".symtab"))
		binary->symbols = debug->elf.get();
	if (want_dwarf) {
		if (own_dwarf)
			binary->lines = SourceLines::open(fd.get());
		else if (debug && has_dwarf(*debug->elf))
			binary->lines = SourceLines::open(debug->fd.get());
	}
	if (debug)
		binary->debug = std::move(debug->elf);
	binary->wants_debug_file = !binary->elf->build_id().empty() &&
				   ((binary->symbols == binary->elf.get() && !own_symtab) ||
				    (options.want_lines && !binary->lines));
	if (binary->wants_debug_file)
		if (auto added = added_debug_files.find(binary->elf->build_id()); added != added_debug_files.end())
			take_debug_file(*binary, added->second.get());
	return binary;
}

Binary *Symbolizer::Impl::own_vdso(uint64_t size)
{
	if (!vdso_read) {
		vdso_read = true;
		vdso.elf = read_own_vdso(vdso_size);
		vdso.symbols = vdso.elf.get();
	}
	// A different size is a different image (a 32-bit process's): better unnamed than misnamed.
	return vdso.elf && size == vdso_size ? &vdso : nullptr;
}

const PerfMap::Symbol *Symbolizer::Impl::jit_symbol(uint32_t pid, uint64_t address, std::string &path)
{
	LiveProcess &process = live_process(pid);
	if (!process.perf_map_read) {
		process.perf_map_read = true;
		// Only root's file or the process's own: of a process that is gone the owner is
		// not known any more, so only root's.
		uid_t owner = process.alive ? process.uid : 0;
		process.perf_map_path = options.perf_map_dir + "/perf-" + std::to_string(pid) + ".map";
		process.perf_map = PerfMap::load(process.perf_map_path, owner);
		// A JIT in a container writes the map in its own /tmp, under its own PID.
		if (!process.perf_map && process.alive && process.root) {
			uint32_t inner = namespaced_pid(pid_dir(pid), pid);
			std::string inside = "/tmp/perf-" + std::to_string(inner) + ".map";
			process.perf_map = PerfMap::load(inside, owner, process.root.get());
			if (process.perf_map)
				process.perf_map_path = inside;
		}
		if (process.perf_map)
			stats.perf_maps_read++;
	}
	if (!process.perf_map)
		return nullptr;
	path = process.perf_map_path;
	return process.perf_map->find(address);
}

const std::string &Symbolizer::Impl::name_of(Binary &binary, const ElfFile::Symbol &symbol)
{
	auto [it, inserted] = binary.names.try_emplace(symbol.name.data());
	if (inserted)
		it->second = demangle(symbol.name);
	return it->second;
}

Symbolizer::Symbolizer(SymbolizerOptions options) : impl_(std::make_unique<Impl>())
{
	impl_->options = std::move(options);
	impl_->binaries.set_capacity(impl_->options.kept_files);
	impl_->read_now = ProcessHistory{impl_->options.proc_root};
}

Symbolizer::~Symbolizer() = default;

void Symbolizer::set_process_history(const ProcessHistory *history)
{
	impl_->history = history;
	impl_->live.clear();
}

void Symbolizer::load_kernel_symbols()
{
	std::call_once(impl_->kernel_loaded, [this] {
		const SymbolizerOptions &o = impl_->options;
		KernelSymbolSource source = ::load_kernel_symbols(
			o.kallsyms_path, o.kernel_cache_dir, o.kernel_cache_dir.empty() ? "" : kernel_identity());
		impl_->kernel = std::move(source.symbols);
		impl_->kernel_complete = source.complete;
		impl_->stats.kernel_symbols = impl_->kernel.size();
	});
}

const KernelSymbolRecord *Symbolizer::loaded_kernel_symbol(uint64_t address, bool return_address,
							     uint64_t time_ns) const
{
	const uint64_t back = return_address && address ? 1 : 0;
	return impl_->history ? impl_->history->kernel_symbol(address - back, time_ns) : nullptr;
}

Frame Symbolizer::kernel_frame(uint64_t address, bool return_address, uint64_t time_ns)
{
	return kernel_frame(address, return_address, loaded_kernel_symbol(address, return_address, time_ns));
}

Frame Symbolizer::kernel_frame(uint64_t address, bool return_address, const KernelSymbolRecord *record)
{
	load_kernel_symbols();
	Frame frame;
	frame.kind = FrameKind::Kernel;
	frame.address = address;
	const uint64_t back = return_address && address ? 1 : 0;
	// A BPF program loaded (or unloaded) while sampling is not in kallsyms as read at the
	// start, and kallsyms has no sizes: an exact record of the side band wins.
	if (record) {
		frame.name = record->name;
		frame.symbol_offset = address - record->start;
		frame.module = record->bpf || record->name.starts_with("bpf_") ? "bpf" : "";
		frame.module_offset = frame.module.empty() ? address : address - record->start;
		return frame;
	}
	// The cached core kernel does not hold modules or BPF programs loaded before the run:
	// an address past it is looked up in kallsyms itself, read then, once.
	constexpr uint64_t kCoreSlack = 16 << 20;
	if (!impl_->kernel_complete && address - back > impl_->kernel.core_end() + kCoreSlack) {
		impl_->kernel = KernelSymbols::load(impl_->options.kallsyms_path);
		impl_->kernel_complete = true;
		impl_->stats.kernel_symbols = impl_->kernel.size();
		impl_->stats.kallsyms_reread = true;
	}
	if (auto match = impl_->kernel.find(address - back)) {
		frame.name = match->name;
		frame.symbol_offset = match->offset + back;
		frame.module = match->module;
		frame.module_offset = match->module_offset + back;
	}
	return frame;
}

const ProcessImage *Symbolizer::image_at(uint32_t pid, uint64_t time_ns)
{
	if (impl_->history)
		if (const ProcessImage *image = impl_->history->image_at(pid, time_ns))
			return image;
	if (const ProcessImage *image = impl_->read_now.image_at(pid, time_ns))
		return image;
	// Not in the history: what it maps now is all there is.
	LiveProcess &process = impl_->live_process(pid);
	const ProcessMaps &now = impl_->maps_now(pid, process);
	if (!process.alive)
		return nullptr;
	std::vector<MapEntry> executable;
	for (const MapEntry &entry : now.entries())
		if (entry.executable())
			executable.push_back(entry);
	impl_->read_now.add_snapshot(pid, "", std::move(executable), 0);
	return impl_->read_now.image_at(pid, time_ns);
}

void Symbolizer::forget_live_processes()
{
	impl_->read_now = ProcessHistory{impl_->options.proc_root};
	impl_->live.clear();
	impl_->gone_without_perf_map.clear();
}

// The object `mapping` of pid's image holds (null: no mapping covers the address).
uint32_t Symbolizer::Impl::object_of(uint32_t pid, const MapEntry *mapping)
{
	using Kind = UserObject::Kind;
	ObjectLookup key;
	if (mapping && mapping->file_backed()) {
		key = {Kind::File, mapping->dev_major, mapping->dev_minor, mapping->inode, mapping->deleted, mapping->path};
	} else if (mapping && mapping->pseudo()) {
		// Only the vDSO is read, from this process's own, when the sizes agree.
		key = {Kind::Area, 0, 0, mapping->path == "[vdso]" ? mapping->end - mapping->start : 0, false, mapping->path};
	} else {
		key = {Kind::Jit, 0, 0, pid, false, ""};
	}
	auto it = object_ids.find(key);
	if (it == object_ids.end()) {
		// Code no file backs is named only by the process's perf map: once the process
		// is gone without one, nothing will name it, whichever process it was.
		if (std::get<0>(key) == Kind::Jit) {
			if (gone_without_perf_map.count(pid))
				return 0;
			const std::string perf_map = options.perf_map_dir + "/perf-" + std::to_string(pid) + ".map";
			if (gone(pid) && access(perf_map.c_str(), F_OK) != 0) {
				gone_without_perf_map.insert(pid);
				return 0;
			}
		}
		it = object_ids.emplace(ObjectKey(key), uint32_t(objects.size())).first;
		Object o;
		o.object.kind = std::get<0>(key);
		o.object.pid = pid;
		if (o.object.kind != Kind::Jit)
			o.object.mapping = *mapping;
		objects.push_back(std::move(o));
	} else if (UserObject &known = objects[it->second].object; known.kind == Kind::File && known.pid != pid) {
		// The newest process to map a file is the likeliest to map it still at the end.
		known.pid = pid;
		known.mapping.start = mapping->start;
		known.mapping.end = mapping->end;
		known.mapping.offset = mapping->offset;
	}
	return it->second;
}

UserLocation Symbolizer::locate(uint32_t pid, const ProcessImage *image, uint64_t address, bool return_address)
{
	const uint64_t back = return_address && address ? 1 : 0;
	const MapEntry *mapping = image ? image->find(address - back) : nullptr;
	UserLocation where;
	where.object = impl_->object_of(pid, mapping);
	where.offset = address;
	if (mapping) {
		where.mapped = {mapping->start, mapping->end, mapping->offset};
		const UserObject::Kind kind = impl_->objects[where.object].object.kind;
		if (kind == UserObject::Kind::File || kind == UserObject::Kind::Area)
			where.offset = address - mapping->start + mapping->offset;
	}
	return where;
}

size_t Symbolizer::object_count() const
{
	return impl_->objects.size();
}

void Symbolizer::drop_files()
{
	impl_->binaries.erase_if([](const FileKey &, const std::unique_ptr<Binary> &) { return true; });
}

void Symbolizer::forget_objects()
{
	impl_->objects.resize(1);
	impl_->object_ids.clear();
}

// Where a frame at `where` lies in its process: the address and the mapping, which a name
// kept by file and offset (kept_named_bytes) leaves out, since they are each process's own.
static void place(Frame &frame, const UserLocation &where, bool in_mapping)
{
	const MapPlacement &mapped = where.mapped;
	frame.address = in_mapping && mapped.end ? where.offset - mapped.offset + mapped.start : where.offset;
	frame.map_start = mapped.start;
	frame.map_end = mapped.end;
	frame.map_offset = mapped.offset;
}

// user_frames without what kept_named_bytes keeps: from the file itself. True when the
// frames took the file's DWARF, the part of naming worth keeping them for.
bool Symbolizer::Impl::read_user_frames(const UserLocation &where, bool return_address, std::vector<Frame> &out)
{
	const UserObject &object = objects[where.object].object;
	const bool in_mapping = object.kind == UserObject::Kind::File || object.kind == UserObject::Kind::Area;
	Frame frame;
	frame.kind = FrameKind::User;
	place(frame, where, in_mapping);
	const uint64_t back = return_address && where.offset ? 1 : 0;

	Binary *binary = binary_of(where.object);
	if (!binary) {
		if (in_mapping) {
			// No file to read: its offset in the file is the best address the frame has.
			frame.module = object.mapping.path;
			frame.module_offset = where.offset;
		} else if (object.kind == UserObject::Kind::Jit) {
			// What a JIT compiler wrote.
			std::string path;
			if (const PerfMap::Symbol *jit = jit_symbol(object.pid, where.offset - back, path)) {
				frame.name = jit->name;
				frame.symbol_offset = where.offset - jit->start;
				frame.module = path;
				frame.module_offset = where.offset;
			}
		}
		out.push_back(std::move(frame));
		return false;
	}

	frame.module = object.mapping.path;
	const uint64_t file_offset = where.offset - back;
	// Until the ELF file says where that offset is loaded, the offset is the best address
	// the frame has in the file's own terms.
	frame.module_offset = where.offset;
	frame.build_id = binary->elf->build_id();
	std::optional<uint64_t> elf_address = binary->elf->address_of_file_offset(file_offset);
	if (!elf_address) {
		out.push_back(std::move(frame));
		return false;
	}
	frame.module_offset = *elf_address + back;
	// A separate debug file has the fullest table, but not the binary's PLT.
	const bool from_debug_file = binary->symbols != binary->elf.get();
	const ElfFile::Symbol *symbol = from_debug_file ? binary->elf->find_plt_symbol(*elf_address) : nullptr;
	if (!symbol)
		symbol = binary->symbols->find_symbol(*elf_address);
	if (!symbol && from_debug_file)
		symbol = binary->elf->find_symbol(*elf_address);
	if (symbol) {
		frame.name = name_of(*binary, *symbol);
		frame.symbol_offset = frame.module_offset - symbol->start;
	}
	if (binary->lines) {
		std::vector<SourceLocation> lines = binary->lines->find(*elf_address);
		for (size_t i = 0; options.want_inlined && i + 1 < lines.size(); i++) {
			if (lines[i].function.empty())
				continue;
			Frame inlined = frame;
			inlined.name = lines[i].function;
			inlined.symbol_offset = 0;
			inlined.source_file = lines[i].file;
			inlined.line = lines[i].line;
			inlined.inlined = true;
			out.push_back(std::move(inlined));
		}
		if (!lines.empty()) {
			frame.source_file = lines.back().file;
			frame.line = lines.back().line;
		}
	}
	out.push_back(std::move(frame));
	return binary->lines != nullptr;
}

void Symbolizer::user_frames(const UserLocation &where, bool return_address, std::vector<Frame> &out)
{
	Impl &d = *impl_;
	const UserObject &object = d.objects[where.object].object;
	if (object.kind != UserObject::Kind::File || !d.options.kept_named_bytes) {
		d.read_user_frames(where, return_address, out);
		return;
	}
	const MapEntry &file = object.mapping;
	const Impl::NamedKey key{file.dev_major, file.dev_minor, file.inode, where.offset, return_address};
	if (const Impl::NamedFrames *kept = d.named.find(key)) {
		d.stats.named_from_kept++;
		for (const Frame &frame : kept->frames) {
			out.push_back(frame);
			out.back().module = file.path;
			place(out.back(), where, true);
		}
		return;
	}
	d.stats.named_from_file++;
	const size_t first = out.size();
	// Only what took DWARF is kept: naming from symbols alone is cheap (a sorted table,
	// read with the file), and kept it would push out names that cost a file's DWARF. A
	// file that could not be read now may be later.
	if (!d.read_user_frames(where, return_address, out))
		return;
	// Kept without what depends on where the file was mapped, which the next use sets.
	Impl::NamedFrames named;
	named.bytes = 2 * sizeof(Impl::NamedKey) + sizeof(Impl::NamedFrames) + kLruEntryBytes;
	named.frames.reserve(out.size() - first);
	for (size_t i = first; i < out.size(); i++) {
		Frame frame = out[i];
		std::string().swap(frame.module);
		named.bytes += frame_bytes(frame);
		named.frames.push_back(std::move(frame));
	}
	d.named_bytes += named.bytes;
	d.named.insert(key, std::move(named));
	while (d.named_bytes > d.options.kept_named_bytes)
		if (std::optional<Impl::NamedFrames> dropped = d.named.pop_oldest()) {
			d.named_bytes -= dropped->bytes;
			d.stats.named_dropped++;
		}
}

Frame Symbolizer::user_frame(uint32_t pid, uint64_t address, uint64_t time_ns)
{
	std::vector<Frame> frames;
	user_frames(locate(pid, image_at(pid, time_ns), address, false), false, frames);
	return std::move(frames.back());
}

std::vector<std::string> Symbolizer::wanted_debug_files()
{
	std::vector<std::string> wanted;
	for (uint32_t id = 1; id < impl_->objects.size(); id++) {
		Binary *binary = impl_->binary_of(id);
		if (binary && binary->wants_debug_file && impl_->asked_debug_files.insert(binary->elf->build_id()).second)
			wanted.push_back(binary->elf->build_id());
	}
	return wanted;
}

Status Symbolizer::add_debug_file(const std::string &build_id, int fd)
{
	if (!impl_->asked_debug_files.count(build_id))
		return Error("no file wants it");
	std::unique_ptr<ElfFile> debug = ElfFile::open(fd);
	if (!debug)
		return Error("not an ELF file");
	if (debug->build_id() != build_id)
		return Error(debug->build_id().empty() ? "it has no build id"
						       : "its build id is " + debug->build_id() + ", not " + build_id);
	if (!debug->has_section(".symtab") && !(impl_->options.wants_dwarf() && has_dwarf(*debug)))
		return Error("neither symbols nor DWARF in it");
	UniqueFd kept(fcntl(fd, F_DUPFD_CLOEXEC, 0));
	if (!kept)
		return Error("cannot keep it open");
	impl_->binaries.for_each([&](const FileKey &, std::unique_ptr<Binary> &binary) {
		if (binary && binary->wants_debug_file && binary->elf->build_id() == build_id)
			impl_->take_debug_file(*binary, kept.get());
	});
	impl_->added_debug_files[build_id] = std::move(kept);
	impl_->stats.debug_files_added++;
	// What was named without it is named again.
	impl_->named.erase_if([&](const Impl::NamedKey &, const Impl::NamedFrames &named) {
		const bool stale = named.frames.front().build_id == build_id;
		if (stale)
			impl_->named_bytes -= named.bytes;
		return stale;
	});
	return {};
}

// A debug file from elsewhere, already checked against its build id by add_debug_file:
// its symbols where binary has no .symtab, its DWARF where binary has none and some frame
// wants it. Nothing when it is not binary's or has neither (add_debug_file said why).
void Symbolizer::Impl::take_debug_file(Binary &binary, int fd)
{
	std::unique_ptr<ElfFile> debug = ElfFile::open(fd);
	if (!debug || !debug_file_mismatch(*binary.elf, *debug).ok())
		return;
	const bool symbols = binary.symbols == binary.elf.get() && !binary.elf->has_section(".symtab") &&
			     debug->has_section(".symtab");
	// Its DWARF too, for inlined frames or -v's lines, once it is here for its symbols.
	const bool lines = options.wants_dwarf() && !binary.lines && has_dwarf(*debug);
	if (!symbols && !lines)
		return;
	if (lines)
		binary.lines = SourceLines::open(fd);
	if (symbols) {
		binary.symbols = debug.get();
		binary.debug = std::move(debug);
	}
	binary.wants_debug_file = false;
}

SymbolizerStats Symbolizer::stats() const
{
	SymbolizerStats stats = impl_->stats;
	stats.named_kept = impl_->named.size();
	stats.named_kept_bytes = impl_->named_bytes;
	return stats;
}
