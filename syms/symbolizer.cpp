// syms/symbolizer.cpp: names kernel and user addresses with the project's own resolvers.
#include "syms/symbolizer.h"

#include <cinttypes>
#include <cstdio>
#include <fcntl.h>
#include <linux/openat2.h>
#include <map>
#include <mutex>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unordered_map>

#include "syms/demangle.h"
#include "syms/elf.h"
#include "syms/fd.h"
#include "syms/kallsyms.h"
#include "syms/maps.h"

namespace {

// /proc/PID/maps names a file by device and inode; that pair is the file's identity
// across processes and mount namespaces, where its path is not.
struct FileKey {
	uint32_t major, minor;
	uint64_t inode;
	auto operator<=>(const FileKey &) const = default;
};

struct Process {
	ProcessMaps maps;
	std::vector<ElfFile *> files; // per maps entry, once looked up
	std::vector<bool> looked_up;
};

// The file the path names inside root_dir, resolved as the process sees it: absolute
// symlinks and ".." stay inside that root.
UniqueFd open_in_root(int root_dir, const std::string &path)
{
	open_how how{};
	how.flags = O_RDONLY | O_CLOEXEC;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	size_t first = path.find_first_not_of('/');
	if (first == std::string::npos)
		return UniqueFd();
	std::string relative = path.substr(first);
	long fd = syscall(SYS_openat2, root_dir, relative.c_str(), &how, sizeof(how));
	return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

// This process's own vDSO, as an ELF image. Every 64-bit process on the machine maps
// the same one, and it is nowhere on disk.
std::unique_ptr<ElfFile> read_own_vdso(uint64_t &size)
{
	size = 0;
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	ProcessMaps own;
	if (base == 0 || !ProcessMaps::load("/proc/self/maps", own))
		return nullptr;
	const MapEntry *entry = own.find(base);
	if (!entry || entry->path != "[vdso]")
		return nullptr;
	size = entry->end - entry->start;
	const uint8_t *image = reinterpret_cast<const uint8_t *>(entry->start);
	return ElfFile::from_bytes(std::vector<uint8_t>(image, image + size));
}

std::string hex(uint64_t value)
{
	char text[24];
	std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
	return text;
}

} // namespace

struct Symbolizer::Impl {
	SymbolizerOptions options;
	SymbolizerStats stats;

	std::once_flag kernel_loaded;
	KernelSymbols kernel;

	std::unordered_map<uint32_t, Process> processes;
	std::map<FileKey, std::unique_ptr<ElfFile>> files;
	bool vdso_read = false;
	uint64_t vdso_size = 0;
	std::unique_ptr<ElfFile> vdso;
	// Demangled names, keyed by where the raw name lies in its mapped file: each name is
	// demangled once, and only if some frame needs it.
	std::unordered_map<const char *, std::string> names;

	Process &process(uint32_t pid);
	ElfFile *file_of(uint32_t pid, Process &process, size_t index);
	ElfFile *open_file(uint32_t pid, const MapEntry &entry);
	ElfFile *own_vdso(uint64_t size);
	const std::string &name_of(const ElfFile::Symbol &symbol);
};

Process &Symbolizer::Impl::process(uint32_t pid)
{
	auto [it, inserted] = processes.try_emplace(pid);
	if (inserted) {
		// A process that is gone keeps an empty entry: its maps are not read again.
		if (ProcessMaps::load(options.proc_root + "/" + std::to_string(pid) + "/maps", it->second.maps))
			stats.processes_read++;
		it->second.files.assign(it->second.maps.entries().size(), nullptr);
		it->second.looked_up.assign(it->second.maps.entries().size(), false);
	}
	return it->second;
}

ElfFile *Symbolizer::Impl::file_of(uint32_t pid, Process &process, size_t index)
{
	if (process.looked_up[index])
		return process.files[index];
	process.looked_up[index] = true;
	const MapEntry &entry = process.maps.entries()[index];
	ElfFile *elf = nullptr;
	if (entry.file_backed()) {
		FileKey key{entry.dev_major, entry.dev_minor, entry.inode};
		auto it = files.find(key);
		elf = it != files.end() ? it->second.get() : open_file(pid, entry);
	} else if (entry.path == "[vdso]") {
		elf = own_vdso(entry.end - entry.start);
	}
	process.files[index] = elf;
	return elf;
}

ElfFile *Symbolizer::Impl::open_file(uint32_t pid, const MapEntry &entry)
{
	std::string pid_dir = options.proc_root + "/" + std::to_string(pid);
	// map_files reaches the very file mapped, even deleted or in another mount namespace.
	char range[48];
	std::snprintf(range, sizeof(range), "/map_files/%" PRIx64 "-%" PRIx64, entry.start, entry.end);
	UniqueFd fd = open_read_only((pid_dir + range).c_str());
	// The path of a deleted file may name a newer file by now: only map_files is trusted then.
	if (!fd && !entry.deleted) {
		UniqueFd root(open((pid_dir + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
		if (root)
			fd = open_in_root(root.get(), entry.path);
	}
	if (!fd)
		return nullptr;
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	if (!elf)
		return nullptr;
	stats.elf_files_parsed++;
	ElfFile *result = elf.get();
	files[FileKey{entry.dev_major, entry.dev_minor, entry.inode}] = std::move(elf);
	return result;
}

ElfFile *Symbolizer::Impl::own_vdso(uint64_t size)
{
	if (!vdso_read) {
		vdso_read = true;
		vdso = read_own_vdso(vdso_size);
	}
	// A different size is a different image (a 32-bit process's): better unnamed than misnamed.
	return size == vdso_size ? vdso.get() : nullptr;
}

const std::string &Symbolizer::Impl::name_of(const ElfFile::Symbol &symbol)
{
	auto [it, inserted] = names.try_emplace(symbol.name.data());
	if (inserted)
		it->second = demangle(symbol.name);
	return it->second;
}

Symbolizer::Symbolizer(SymbolizerOptions options) : impl_(std::make_unique<Impl>())
{
	impl_->options = std::move(options);
}

Symbolizer::~Symbolizer() = default;

void Symbolizer::load_kernel_symbols()
{
	std::call_once(impl_->kernel_loaded, [this] {
		impl_->kernel = KernelSymbols::load(impl_->options.kallsyms_path);
		impl_->stats.kernel_symbols = impl_->kernel.size();
	});
}

Frame Symbolizer::kernel_frame(uint64_t address)
{
	load_kernel_symbols();
	Frame frame;
	frame.kind = FrameKind::Kernel;
	frame.address = address;
	if (auto match = impl_->kernel.find(address)) {
		frame.name = match->name;
		frame.symbol_offset = match->offset;
		frame.module = match->module;
		frame.module_offset = match->module_offset;
	}
	return frame;
}

Frame Symbolizer::user_frame(uint32_t pid, uint64_t address)
{
	Frame frame;
	frame.kind = FrameKind::User;
	frame.address = address;

	Process &process = impl_->process(pid);
	const MapEntry *entry = process.maps.find(address);
	if (!entry)
		return frame;
	frame.map_start = entry->start;
	frame.map_end = entry->end;
	frame.map_offset = entry->offset;
	frame.module = entry->path;
	uint64_t file_offset = address - entry->start + entry->offset;
	// Until the ELF file says where that offset is loaded, the offset is the best address
	// the frame has in the file's own terms.
	frame.module_offset = file_offset;

	size_t index = static_cast<size_t>(entry - process.maps.entries().data());
	ElfFile *elf = impl_->file_of(pid, process, index);
	if (!elf)
		return frame;
	frame.build_id = elf->build_id();
	std::optional<uint64_t> elf_address = elf->address_of_file_offset(file_offset);
	if (!elf_address)
		return frame;
	frame.module_offset = *elf_address;
	if (const ElfFile::Symbol *symbol = elf->find_symbol(*elf_address)) {
		frame.name = impl_->name_of(*symbol);
		frame.symbol_offset = *elf_address - symbol->start;
	}
	// file:line for options.want_lines joins here: module_offset is the address DWARF
	// line tables are written in, and the ElfFile holds the bytes their sections live in.
	return frame;
}

void Symbolizer::preload_process(uint32_t pid)
{
	Process &process = impl_->process(pid);
	for (size_t i = 0; i < process.maps.entries().size(); i++)
		if (process.maps.entries()[i].executable())
			impl_->file_of(pid, process, i);
}

SymbolizerStats Symbolizer::stats() const
{
	return impl_->stats;
}

std::string frame_label(const Frame &frame)
{
	if (frame.named())
		return frame.name;
	if (frame.module.empty())
		return "[unknown]";
	std::string_view module = frame.module;
	// "[heap]" and "[vdso]" are already bracketed; a path shows its last component.
	if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
		module = module.substr(1, module.size() - 2);
	else if (size_t slash = module.rfind('/'); slash != std::string_view::npos && slash + 1 < module.size())
		module = module.substr(slash + 1);
	return "[" + std::string(module) + "+" + hex(frame.module_offset) + "]";
}
