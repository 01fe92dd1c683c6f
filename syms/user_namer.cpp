// syms/user_namer.cpp: located user addresses named from the files, perf maps and debug
// files that cover them.
#include "syms/user_namer.h"

#include <fcntl.h>

#include "syms/live_processes.h"

namespace {

// This process's own vDSO (own_vdso_image), parsed; size: its size.
std::unique_ptr<ElfFile> read_own_vdso(uint64_t &size)
{
	std::vector<uint8_t> image = own_vdso_image();
	size = image.size();
	return image.empty() ? nullptr : ElfFile::from_bytes(std::move(image));
}

// Where a frame at `where` lies in its process: the address and the mapping, which a name
// kept by file and offset leaves out, since they are each process's own.
void place(Frame &frame, const UserLocation &where, bool in_mapping)
{
	const MapPlacement &mapped = where.mapped;
	frame.address = in_mapping && mapped.end ? where.offset - mapped.offset + mapped.start : where.offset;
	frame.map_start = mapped.start;
	frame.map_end = mapped.end;
	frame.map_offset = mapped.offset;
}

} // namespace

UserNamer::UserNamer(const SymbolizerOptions &options, SymbolizerStats &stats, LiveProcesses &processes)
	: options_(options), stats_(stats), processes_(processes), files_(options, stats), named_(options, stats),
	  jit_(options, processes, stats)
{
}

SymbolFile *UserNamer::file_of(const UserObject &object)
{
	const MapEntry &mapping = object.mapping;
	if (object.kind == UserObject::Kind::Area && mapping.path == "[vdso]")
		return own_vdso(mapping.end - mapping.start);
	if (object.kind != UserObject::Kind::File)
		return nullptr;
	const FileKey key = FileKey::of(mapping);
	if (std::unique_ptr<SymbolFile> *known = files_.find(key))
		return known->get();
	return files_.insert(key, open_file(object.pid, mapping));
}

std::unique_ptr<SymbolFile> UserNamer::open_file(uint32_t pid, const MapEntry &mapping)
{
	// The very file mapped, while the process lives and still maps it there (even deleted,
	// even in another mount namespace); else the path inside its root; once it is gone,
	// the plain path. Either path only if it still leads to the file that was mapped.
	LiveProcess &process = processes_.process(pid);
	UniqueFd fd;
	int root = -1;
	if (process.alive) {
		const MapEntry *now = processes_.maps_now(pid).find(mapping.start);
		if (now && now->start == mapping.start && now->end == mapping.end && now->inode == mapping.inode &&
		    now->dev_major == mapping.dev_major && now->dev_minor == mapping.dev_minor) {
			fd.reset(open_map_file(processes_.dir(pid), mapping.start, mapping.end));
		}
		root = process.root.get();
		if (!fd && process.root) {
			fd = open_in_root(process.root.get(), mapping.path);
			if (fd && !same_file(fd.get(), mapping))
				fd.reset();
		}
	}
	if (!host_root_)
		host_root_.reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (root < 0)
		root = host_root_.get();
	// A process that has exited has no files or root to open, and neither has one that
	// exited but is not reaped (a zombie: its /proc/PID is there, empty).
	if (!process.alive || (!fd && !process.root)) {
		fd.reset(open(mapping.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
		if (fd && !same_file(fd.get(), mapping))
			fd.reset();
	}
	if (!fd)
		return nullptr;
	std::unique_ptr<SymbolFile> file = SymbolFile::open(fd.get(), mapping.path, root, host_root_.get(), options_, stats_);
	if (file && file->wants_debug_file())
		if (int added = debug_files_.find(file->build_id()); added >= 0)
			file->take_debug_file(added, options_);
	return file;
}

SymbolFile *UserNamer::own_vdso(uint64_t size)
{
	if (!vdso_read_) {
		vdso_read_ = true;
		vdso_ = SymbolFile::of_image(read_own_vdso(vdso_size_));
	}
	// A different size is a different image (a 32-bit process's): better unnamed than misnamed.
	return vdso_ && size == vdso_size_ ? vdso_.get() : nullptr;
}

// frames without what the named cache keeps: from the file itself. True when the frames
// took the file's DWARF, the part of naming worth keeping them for.
bool UserNamer::read_frames(const UserObject &object, const UserLocation &where, bool return_address,
			    std::vector<Frame> &out)
{
	const bool in_mapping = object.in_mapping();
	Frame frame;
	frame.kind = FrameKind::Native;
	place(frame, where, in_mapping);
	const uint64_t back = return_address && where.offset ? 1 : 0;

	SymbolFile *file = file_of(object);
	if (!file) {
		if (in_mapping) {
			// No file to read: its offset in the file is the best address the frame has.
			frame.module = object.mapping.path;
			frame.module_offset = where.offset;
		} else if (object.kind == UserObject::Kind::Jit) {
			// What a JIT compiler wrote.
			std::string path;
			if (const PerfMap::Symbol *jit = jit_.find(object.pid, where.offset - back, path)) {
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
	// Until the ELF file says where that offset is loaded, the offset is the best address
	// the frame has in the file's own terms.
	frame.module_offset = where.offset;
	frame.build_id = file->build_id();
	std::optional<uint64_t> elf_address = file->elf().address_of_file_offset(where.offset - back);
	if (!elf_address) {
		out.push_back(std::move(frame));
		return false;
	}
	frame.module_offset = *elf_address + back;
	if (const ElfFile::Symbol *symbol = file->symbol_at(*elf_address)) {
		frame.name = file->name_of(*symbol);
		frame.symbol_offset = frame.module_offset - symbol->start;
	}
	SourceLines *lines = files_.lines_of(*file);
	if (lines) {
		std::vector<SourceLocation> found = lines->find(*elf_address);
		for (size_t i = 0; options_.want_inlined && i + 1 < found.size(); i++) {
			if (found[i].function.empty())
				continue;
			Frame inlined = frame;
			inlined.name = found[i].function;
			inlined.symbol_offset = 0;
			inlined.source_file = found[i].file;
			inlined.line = found[i].line;
			inlined.inlined = true;
			out.push_back(std::move(inlined));
		}
		if (!found.empty()) {
			frame.source_file = found.back().file;
			frame.line = found.back().line;
		}
	}
	out.push_back(std::move(frame));
	return lines != nullptr;
}

void UserNamer::frames(const UserObject &object, const UserLocation &where, bool return_address,
		       std::vector<Frame> &out)
{
	if (object.kind != UserObject::Kind::File || !named_.enabled()) {
		read_frames(object, where, return_address, out);
		return;
	}
	const MapEntry &file = object.mapping;
	const NamedCache::Key key{file.dev_major, file.dev_minor, file.inode, where.offset, return_address};
	if (const std::vector<Frame> *kept = named_.find(key)) {
		stats_.named_from_kept++;
		for (const Frame &frame : *kept) {
			out.push_back(frame);
			out.back().module = file.path;
			place(out.back(), where, true);
		}
		return;
	}
	stats_.named_from_file++;
	const size_t first = out.size();
	// Only what took DWARF is kept: naming from symbols alone is cheap (a sorted table,
	// kept with the file), and kept it would push out names that cost a file's DWARF. A
	// file that could not be read now may be later.
	if (!read_frames(object, where, return_address, out))
		return;
	// Kept without what depends on where the file was mapped, which the next use sets.
	std::vector<Frame> named(out.begin() + std::ptrdiff_t(first), out.end());
	for (Frame &frame : named)
		std::string().swap(frame.module);
	named_.keep(key, std::move(named));
}

std::optional<std::string> UserNamer::wanted_debug_file(const UserObject &object)
{
	SymbolFile *file = file_of(object);
	if (file && file->wants_debug_file() && debug_files_.ask(file->build_id()))
		return file->build_id();
	return std::nullopt;
}

Status UserNamer::add_debug_file(const std::string &build_id, int fd)
{
	Result<int> kept = debug_files_.add(build_id, fd, options_);
	if (!kept.ok())
		return Error(kept.error());
	files_.for_each([&](SymbolFile &file) {
		if (file.wants_debug_file() && file.build_id() == build_id)
			file.take_debug_file(kept.value(), options_);
	});
	stats_.debug_files_added++;
	// What was named without it is named again.
	named_.forget_build_id(build_id);
	return {};
}

void UserNamer::count_kept(SymbolizerStats &stats)
{
	stats.named_kept = named_.size();
	stats.named_kept_bytes = named_.bytes();
	stats.files_kept = files_.size();
	stats.file_bytes_kept = files_.held_bytes();
	stats.decompressed_copies = stats.decompressed_bytes = 0;
	files_.for_each([&](SymbolFile &file) {
		if (const size_t bytes = file.dwarf_copy_bytes()) {
			stats.decompressed_copies++;
			stats.decompressed_bytes += bytes;
		}
	});
}
