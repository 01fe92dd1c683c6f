// v8/runtime.cpp: Node in a process: the mapped file that holds V8, and its layout.
#include "v8/runtime.h"

#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/diagnostics.h"
#include "base/fd.h"
#include "elf/elf.h"

bool v8_file_name(std::string_view path)
{
	const size_t slash = path.rfind('/');
	const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
	if (name.starts_with("libnode.so"))
		return true;
	if (name == "nodejs" || !name.starts_with("node"))
		return name == "nodejs";
	return name.substr(4).find_first_not_of("0123456789") == std::string_view::npos;
}

bool V8Files::count_gcs(const ElfFile &elf, int fd)
{
	if (!attach_)
		return false;
	const std::vector<uint64_t> offsets = v8_gc_offsets(elf);
	if (offsets.empty())
		return false;
	// Through the descriptor: the file checked, not whatever its path names by now (a uprobe
	// at an offset of another file could land inside an instruction). Each uprobe attached
	// stays to the run's end; a GC counted by some alone is harmless, as the walk keeps no
	// frame unless all are.
	const std::string path = "/proc/self/fd/" + std::to_string(fd);
	for (uint64_t offset : offsets)
		if (!attach_("on_v8_gc", path, offset)) {
			if (getenv("PROFILE_DEBUG"))
				diagnostics::say("V8's GCs not counted (a uprobe at %#" PRIx64 " in %s: %s): JS frames are read "
						 "afresh at each sample",
						 offset, path.c_str(), std::strerror(errno));
			return false;
		}
	gc_counted_++;
	return true;
}

std::optional<Result<V8Layout>> V8Files::detect(uint32_t pid, MapsReads &reads)
{
	const std::string proc = "/proc/" + std::to_string(pid);
	const ProcessMaps *listed = reads.of(pid);
	if (!listed)
		return std::nullopt;
	const ProcessMaps &maps = *listed;
	// libnode.so where one is mapped (the node beside it is a shim), else the executable.
	const MapEntry *chosen = nullptr;
	for (const MapEntry &m : maps.entries())
		if (m.file_backed() && v8_file_name(m.path) && maps.executes(m) &&
		    (!chosen || m.path.find("libnode") != std::string::npos))
			chosen = &m;
	if (!chosen)
		return std::nullopt;
	const FileKey key = FileKey::of(*chosen);
	if (auto it = layouts_.find(key); it != layouts_.end())
		return it->second;
	const auto started = std::chrono::steady_clock::now();
	UniqueFd fd = open_read_only((proc + "/root" + chosen->path).c_str());
	if (!fd || !same_file(fd.get(), *chosen))
		return std::nullopt;
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	Result<V8Layout> layout = elf ? v8_layout(v8_symbols(*elf)) : Result<V8Layout>(Error("not an ELF file this profiler reads"));
	const auto read = std::chrono::steady_clock::now();
	read_ms_ += std::chrono::duration<double, std::milli>(read - started).count();
	if (layout.ok() && count_gcs(*elf, fd.get()))
		layout.value().walk.gc_counted = 1;
	gc_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - read).count();
	if (!layout.ok())
		layout = Error(chosen->path + ": " + layout.error());
	return layouts_.emplace(key, std::move(layout)).first->second;
}
