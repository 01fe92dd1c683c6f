// v8/runtime.h: recognise V8 in a process (a node executable or a libnode.so in its maps) and
// read its layout once per file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/error.h"
#include "proc/maps.h"
#include "runtime/kernel_asks.h"
#include "v8/metadata.h"

// Whether a mapped file's name is Node's: node, node22, nodejs, libnode.so.108.
bool v8_file_name(std::string_view path);

// The layouts of the node files met, by file: each read once.
class V8Files {
public:
	// attach: where the uprobes that count each file's GCs are attached (v8_gc_offsets);
	// none, and no file's GCs are counted.
	explicit V8Files(AttachUprobe attach = {}) : attach_(std::move(attach)) {}
	// What process pid runs (its maps through reads: read once for every runtime that
	// asks): nothing when no Node file is mapped (or the process is gone); else the layout of
	// its V8 (walk.gc_counted set where its file's GCs are counted), or why it cannot be
	// read (one line).
	std::optional<Result<V8Layout>> detect(uint32_t pid, MapsReads &reads);
	// The files read, and the time their metadata took (the file opened, its symbols read).
	size_t files() const { return layouts_.size(); }
	double read_ms() const { return read_ms_; }
	// The files whose GCs are counted, and the time their uprobes took (found and attached).
	size_t gc_counted() const { return gc_counted_; }
	double gc_ms() const { return gc_ms_; }

private:
	// Whether the uprobes on the GCs of the ELF file open at fd are attached.
	bool count_gcs(const ElfFile &elf, int fd);

	AttachUprobe attach_;
	std::map<FileKey, Result<V8Layout>> layouts_;
	double read_ms_ = 0, gc_ms_ = 0;
	size_t gc_counted_ = 0;
};
