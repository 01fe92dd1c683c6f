// python/runtime.cpp: CPython in a process: the mapped file that holds the runtime, its
// symbols, and the few words of its memory the walk needs.
#include "python/runtime.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "elf/elf.h"
#include "base/fd.h"
#include "proc/maps.h"

namespace {

std::string_view base_name(std::string_view path)
{
	const size_t slash = path.rfind('/');
	return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// 3.13 on: the offsets the process states itself at the start of _PyRuntime
// (_Py_DebugOffsets, cookie "xdebugpy") replace the table's. Ok when they were read.
Status apply_debug_offsets(int mem_fd, uint64_t runtime, int minor, PythonLayout &layout)
{
	// Words from the version on, in 3.13's order: version, free_threaded, runtime_state (3),
	// interpreter_state (13), thread_state (9), interpreter_frame (6), code_object (10).
	uint64_t words[43];
	char cookie[8];
	if (!read_process_memory(mem_fd, runtime, cookie, sizeof(cookie)) ||
	    !read_process_memory(mem_fd, runtime + 8, words, sizeof(words)))
		return Error("its _PyRuntime cannot be read");
	if (std::memcmp(cookie, "xdebugpy", 8) != 0)
		return Error("its _PyRuntime has no debug offsets");
	if ((words[0] >> 24) != 3 || int(words[0] >> 16 & 0xff) != minor)
		return Error("its debug offsets are of another version");
	if (words[1] != 0)
		return Error("free-threaded builds are not supported");
	const uint64_t current_frame = words[22], previous = words[28], executable = words[29],
		       instr_ptr = words[30], owner = words[32];
	const uint64_t filename = words[34], name = words[35], qualname = words[36], linetable = words[37],
		       firstlineno = words[38];
	// What the kernel reads of a frame, and user space of a code object, in one read each.
	for (uint64_t frame_field : {previous, executable, instr_ptr})
		if (frame_field > PYTHON_FRAME_READ - 8 || frame_field % 8)
			return Error("its frame layout is not one this profiler reads");
	if (owner >= PYTHON_FRAME_READ || current_frame > 4096)
		return Error("its frame layout is not one this profiler reads");
	for (uint64_t code_field : {filename, name, qualname, linetable, firstlineno})
		if (code_field > kPythonCodeRead - 8)
			return Error("its code object layout is not one this profiler reads");
	layout.tstate_frame = uint16_t(current_frame);
	layout.cframe_frame = -1;
	layout.frame_previous = uint16_t(previous);
	layout.frame_code = uint16_t(executable);
	layout.frame_instr = uint16_t(instr_ptr);
	layout.frame_entry = uint16_t(owner);
	layout.code_filename = uint16_t(filename);
	layout.code_name = uint16_t(name);
	layout.code_qualname = int16_t(qualname);
	layout.code_lines = uint16_t(linetable);
	layout.code_firstlineno = uint16_t(firstlineno);
	return {};
}

template <typename T>
T load(std::span<const uint8_t> bytes, size_t at)
{
	T value{};
	std::memcpy(&value, bytes.data() + at, sizeof(value));
	return value;
}

// .eh_frame_hdr's search table: the start of every FDE and where the FDE is, sorted by start
// (the encodings every GNU toolchain writes: table datarel|sdata4, count udata4).
struct FdeIndex {
	std::span<const uint8_t> hdr, eh_frame;
	uint64_t hdr_at = 0, eh_frame_at = 0;
	size_t count = 0;

	bool open(const ElfFile &elf)
	{
		const auto h = elf.section_data(".eh_frame_hdr"), e = elf.section_data(".eh_frame");
		const auto ha = elf.section_address(".eh_frame_hdr"), ea = elf.section_address(".eh_frame");
		if (!h || !e || !ha || !ea || h->size() < 12 || (*h)[0] != 1 || (*h)[2] != 0x03 || (*h)[3] != 0x3b)
			return false;
		hdr = *h, eh_frame = *e, hdr_at = *ha, eh_frame_at = *ea;
		count = std::min<size_t>(load<uint32_t>(hdr, 8), (hdr.size() - 12) / 8);
		return true;
	}
	uint64_t start(size_t i) const { return hdr_at + int64_t(load<int32_t>(hdr, 12 + 8 * i)); }
	// The last FDE that starts at or before address; count when none.
	size_t before(uint64_t address) const
	{
		size_t low = 0, high = count;
		while (low < high) {
			const size_t mid = low + (high - low) / 2;
			if (start(mid) <= address)
				low = mid + 1;
			else
				high = mid;
		}
		return low == 0 ? count : low - 1;
	}
	// The FDE's [start, end), read from the FDE itself (pc_begin pcrel|sdata4, as its CIE
	// says on every GNU toolchain: checked against the table's start).
	std::optional<std::pair<uint64_t, uint64_t>> range(size_t i) const
	{
		const uint64_t fde = hdr_at + int64_t(load<int32_t>(hdr, 12 + 8 * i + 4));
		if (fde < eh_frame_at || eh_frame.size() < 16 || fde - eh_frame_at > eh_frame.size() - 16)
			return std::nullopt;
		const size_t at = fde - eh_frame_at;
		const uint32_t length = load<uint32_t>(eh_frame, at);
		if (length < 12 || length == 0xffffffff || load<uint32_t>(eh_frame, at + 4) == 0)
			return std::nullopt;
		const uint64_t begin = fde + 8 + int64_t(load<int32_t>(eh_frame, at + 8));
		if (begin != start(i))
			return std::nullopt;
		return std::pair{begin, begin + load<uint32_t>(eh_frame, at + 12)};
	}
};

} // namespace

std::optional<ElfSymbolValue> find_cold_part(const ElfFile &elf, ElfSymbolValue function)
{
	FdeIndex fdes;
	const auto text = elf.section_data(".text");
	const auto text_at = elf.section_address(".text");
	if (!fdes.open(elf) || !text || !text_at || function.address < *text_at ||
	    function.address - *text_at > text->size() || function.size > text->size() - (function.address - *text_at))
		return std::nullopt;
	const auto code = text->subspan(function.address - *text_at, function.size);
	const uint64_t end = function.address + function.size;
	// Every byte is tried as the start of a jump: what is not one (a byte inside another
	// instruction) lands anywhere, seldom twice in one FDE.
	std::unordered_map<size_t, std::set<uint64_t>> targets; // by FDE
	for (size_t i = 0; i + 5 <= code.size(); i++) {
		size_t length = 0;
		if (code[i] == 0xe9)
			length = 5; // jmp rel32
		else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= code.size())
			length = 6; // jcc rel32
		if (!length)
			continue;
		const uint64_t target = function.address + i + length + int64_t(load<int32_t>(code, i + length - 4));
		if (target >= function.address && target < end)
			continue;
		if (const size_t fde = fdes.before(target); fde < fdes.count)
			targets[fde].insert(target);
	}
	std::optional<ElfSymbolValue> best;
	size_t best_count = kMinColdTargets - 1;
	for (const auto &[fde, at] : targets) {
		const auto range = fdes.range(fde);
		if (!range || (range->first < end && range->second > function.address))
			continue;
		const size_t inside = size_t(std::count_if(at.begin(), at.end(), [&](uint64_t target) {
			return target >= range->first && target < range->second;
		}));
		if (inside > best_count) {
			best_count = inside;
			best = ElfSymbolValue{range->first, range->second - range->first};
		}
	}
	return best;
}

int python_minor_of_file_name(std::string_view name)
{
	std::string_view rest;
	if (name.starts_with("libpython3."))
		rest = name.substr(11);
	else if (name.starts_with("python3."))
		rest = name.substr(8);
	else
		return -1;
	int minor = 0;
	size_t digits = 0;
	while (digits < rest.size() && digits < 3 && rest[digits] >= '0' && rest[digits] <= '9')
		minor = minor * 10 + (rest[digits++] - '0');
	if (digits == 0)
		return -1;
	// What may follow: nothing (the binary), ".so...", or an ABI flag ("3.8d", "3.13t").
	rest = rest.substr(digits);
	if (!rest.empty() && rest[0] != '.' && rest != "d" && rest != "m" && rest != "t" && !rest.starts_with("d.") &&
	    !rest.starts_with("m.") && !rest.starts_with("t."))
		return -1;
	return minor;
}

PythonDetection detect_python(uint32_t pid, MapsReads &reads)
{
	PythonDetection found;
	const std::string proc = "/proc/" + std::to_string(pid);
	const ProcessMaps *listed = reads.of(pid);
	if (!listed)
		return found;
	const ProcessMaps &maps = *listed;

	// The file that holds the runtime: a libpython3.X when one is mapped (a binary linked
	// to it has none of its own), else a python3.X binary.
	const MapEntry *chosen = nullptr;
	int minor = -1;
	bool musl = false;
	for (const MapEntry &m : maps.entries()) {
		if (!m.file_backed())
			continue;
		const std::string_view name = base_name(m.path);
		if (name.starts_with("ld-musl") || name.starts_with("libc.musl")) {
			musl = true;
			continue;
		}
		if (name.starts_with("libpypy")) {
			found.kind = PythonDetection::Unknown;
			found.note = "PyPy is not supported";
			return found;
		}
		const int file_minor = python_minor_of_file_name(name);
		if (file_minor < 0 || !maps.executes(m))
			continue;
		const bool library = name.starts_with("lib");
		if (!chosen || (library && !base_name(chosen->path).starts_with("lib"))) {
			chosen = &m;
			minor = file_minor;
		}
	}
	if (!chosen)
		return found;
	found.version = "3." + std::to_string(minor);
	// The thread key's value is found where glibc keeps it.
	if (musl) {
		found.kind = PythonDetection::Unknown;
		found.note = "Python " + found.version + " on musl libc is not supported";
		return found;
	}

	// The file as the process sees it (its own root: containers), and its first mapping,
	// from which its load bias follows.
	UniqueFd fd = open_read_only((proc + "/root" + chosen->path).c_str());
	if (!fd || !same_file(fd.get(), *chosen))
		return found;
	std::unique_ptr<ElfFile> elf = ElfFile::open(fd.get());
	if (!elf) {
		found.kind = PythonDetection::Unknown;
		found.note = chosen->path + " is not an ELF file this profiler reads";
		return found;
	}
	const MapEntry *first = nullptr;
	for (const MapEntry &m : maps.entries())
		if (m.inode == chosen->inode && m.path == chosen->path && (!first || m.offset < first->offset))
			first = &m;
	const std::optional<uint64_t> first_address = elf->address_of_file_offset(first->offset);
	if (!first_address) {
		found.kind = PythonDetection::Unknown;
		found.note = chosen->path + ": its mappings match none of its segments";
		return found;
	}
	const uint64_t bias = first->start - *first_address;

	const auto runtime = find_elf_symbol(*elf, "_PyRuntime");
	const auto eval = find_elf_symbol(*elf, "_PyEval_EvalFrameDefault");
	const auto code_type = find_elf_symbol(*elf, "PyCode_Type");
	if (!runtime || !eval || !code_type || eval->size == 0) {
		found.kind = PythonDetection::Unknown;
		found.note = chosen->path + " lacks the symbols needed (_PyRuntime, _PyEval_EvalFrameDefault, PyCode_Type)";
		return found;
	}
	UniqueFd mem = open_process_memory(pid);
	if (!mem)
		return found;
	// 3.11 on say which version they are; the file name says it for the others.
	if (const auto version = find_elf_symbol(*elf, "Py_Version")) {
		uint32_t hex = 0;
		if (read_process_value(mem.get(), bias + version->address, hex) && (hex >> 24) == 3) {
			minor = int(hex >> 16 & 0xff);
			found.version = "3." + std::to_string(minor);
		}
	}
	const PythonLayout *known = python_layout(minor);
	if (!known) {
		found.kind = PythonDetection::Unknown;
		found.note = "Python " + found.version + " is not a version this profiler knows (3.8 to 3.13)";
		return found;
	}
	found.layout = *known;
	PythonLayout &layout = found.layout;
	if (minor >= 13) {
		if (Status offsets = apply_debug_offsets(mem.get(), bias + runtime->address, minor, layout);
		    !offsets.ok()) {
			found.kind = PythonDetection::Unknown;
			found.note = "Python " + found.version + " in " + chosen->path + ": " + offsets.error();
			return found;
		}
	}
	struct {
		int32_t initialized;
		uint32_t key;
	} tss{};
	uint64_t basic_size = 0;
	if (!read_process_value(mem.get(), bias + runtime->address + layout.runtime_tss, tss) ||
	    !read_process_value(mem.get(), bias + code_type->address + 32, basic_size)) // PyTypeObject.tp_basicsize
		return found;
	if (tss.initialized != 1) {
		found.kind = PythonDetection::NotYet;
		return found;
	}
	if (tss.key >= 32 || basic_size < 64 || basic_size > 1024) {
		found.kind = PythonDetection::Unknown;
		found.note = "Python " + found.version + " in " + chosen->path +
			     ": its runtime does not look as expected (thread key " + std::to_string(tss.key) + ")";
		return found;
	}

	python_process &p = found.process;
	p.eval_start = bias + eval->address;
	p.eval_end = p.eval_start + eval->size;
	// A compiler that splits the function's unlikely paths out names them NAME.cold in
	// .symtab; a stripped binary's are found from its unwind tables and its jumps.
	auto cold = find_elf_symbol(*elf, "_PyEval_EvalFrameDefault.cold");
	if (!cold || !cold->size)
		cold = find_cold_part(*elf, *eval);
	if (cold && cold->size) {
		p.cold_start = bias + cold->address;
		p.cold_end = p.cold_start + cold->size;
	}
	p.code_type = bias + code_type->address;
	p.tss_key = tss.key;
	p.tsd_offset = kGlibcSpecificFirstBlock;
	p.is_python = 1;
	p.chain = layout.chain;
	p.instr = layout.instr;
	p.tstate_frame = layout.tstate_frame;
	p.cframe_frame = layout.cframe_frame;
	p.frame_previous = layout.frame_previous;
	p.frame_code = layout.frame_code;
	p.frame_instr = layout.frame_instr;
	p.frame_entry = layout.frame_entry;
	p.code_units = uint16_t(basic_size);
	p.code_name = python_fingerprint_name(layout);
	p.code_filename = layout.code_filename;
	p.code_firstlineno = layout.code_firstlineno;
	found.kind = PythonDetection::Python;
	return found;
}
