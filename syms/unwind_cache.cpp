// syms/unwind_cache.cpp: compiled unwind tables kept on disk for the rest of the boot, one
// file per object.
#include "syms/unwind_cache.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "syms/fd.h"

namespace {

// Changes whenever what a file holds, or how rows are compiled, does: old files then miss.
constexpr uint32_t kFormatVersion = 2;
constexpr char kMagic[8] = {'P', 'R', 'O', 'F', 'U', 'W', 'T', '\n'};
constexpr size_t kMaxKeySize = 200;

struct FileHeader {
	char magic[8];
	uint32_t version;
	uint32_t row_size;
	uint64_t row_count;
	char source[32]; // UnwindTable::source, NUL-padded
};
static_assert(sizeof(FileHeader) == 56);
constexpr uint64_t kMaxFileSize = sizeof(FileHeader) + kMaxUnwindRows * sizeof(unwind_row);

struct ElfEnd {
	void operator()(Elf *elf) const { elf_end(elf); }
};
using ElfHandle = std::unique_ptr<Elf, ElfEnd>;

// The NT_GNU_BUILD_ID note as lowercase hex, "" without one. Read with pread
// (ELF_C_READ), never mapped: the file's owner may truncate it meanwhile.
std::string build_id_of(int fd)
{
	static const bool libelf_ready = elf_version(EV_CURRENT) != EV_NONE;
	ElfHandle elf(libelf_ready ? elf_begin(fd, ELF_C_READ, nullptr) : nullptr);
	size_t count;
	if (!elf || elf_kind(elf.get()) != ELF_K_ELF || elf_getphdrnum(elf.get(), &count) != 0)
		return "";
	for (size_t i = 0; i < count && i < 64; i++) {
		GElf_Phdr segment;
		if (!gelf_getphdr(elf.get(), int(i), &segment) || segment.p_type != PT_NOTE || segment.p_filesz > (64 << 10))
			continue;
		Elf_Data *notes = elf_getdata_rawchunk(elf.get(), int64_t(segment.p_offset), segment.p_filesz,
						       segment.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!notes)
			continue;
		GElf_Nhdr note;
		size_t name_at, desc_at;
		for (size_t at = 0, next; (next = gelf_getnote(notes, at, &note, &name_at, &desc_at)) > 0; at = next) {
			const auto *bytes = static_cast<const uint8_t *>(notes->d_buf);
			if (note.n_type != NT_GNU_BUILD_ID || note.n_namesz != 4 ||
			    std::memcmp(bytes + name_at, "GNU", 4) != 0 || note.n_descsz == 0 || note.n_descsz > 64)
				continue;
			std::string hex;
			char digits[3];
			for (size_t b = 0; b < note.n_descsz; b++) {
				std::snprintf(digits, sizeof(digits), "%02x", bytes[desc_at + b]);
				hex += digits;
			}
			return hex;
		}
	}
	return "";
}

// Keys become file names: nothing that could name another file, or a hidden one.
bool valid_key(const std::string &key)
{
	if (key.empty() || key.size() > kMaxKeySize || key[0] == '.')
		return false;
	for (char c : key)
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '.'))
			return false;
	return true;
}

bool known_source(std::string_view source)
{
	return source.empty() || source == ".eh_frame" || source == ".debug_frame" || source == ".eh_frame+.debug_frame";
}

// The cache directory (and its parent, if missing) created, when it is a real directory
// of ours and private.
UniqueFd open_cache_dir(const std::string &dir, bool create)
{
	if (create) {
		const size_t slash = dir.find_last_of('/');
		if (slash != std::string::npos && slash > 0)
			mkdir(dir.substr(0, slash).c_str(), 0700);
		mkdir(dir.c_str(), 0700);
	}
	UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	struct stat st;
	return ours_and_private(fd.get(), st) ? std::move(fd) : UniqueFd();
}

// The rows promise what compile_unwind_table's do: in order, of known types.
bool rows_check_out(const std::vector<unwind_row> &rows)
{
	for (size_t i = 0; i < rows.size(); i++) {
		if (rows[i].cfa_type > UNWIND_CFA_END || rows[i].rbp_type > UNWIND_RBP_UNDEFINED ||
		    (i > 0 && rows[i - 1].pc >= rows[i].pc))
			return false;
	}
	return rows.empty() || rows.back().cfa_type == UNWIND_CFA_NONE;
}

} // namespace

std::string unwind_table_key(const std::string &build_id, const struct stat &st)
{
	const std::string version = "u" + std::to_string(kFormatVersion) + "-";
	bool hex = !build_id.empty() && build_id.size() <= 128;
	for (char c : build_id)
		hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
	if (hex)
		return version + "b-" + build_id;
	char identity[160];
	std::snprintf(identity, sizeof(identity), "f-%" PRIx64 "-%" PRIu64 "-%" PRIu64 "-%" PRId64 ".%09ld-%" PRId64 ".%09ld",
		      uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec),
		      st.st_mtim.tv_nsec, int64_t(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
	return version + identity;
}

std::string unwind_table_key(int fd)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return "";
	return unwind_table_key(build_id_of(fd), st);
}

std::optional<UnwindTable> load_cached_unwind_table(const std::string &dir, const std::string &key)
{
	if (dir.empty() || !valid_key(key))
		return std::nullopt;
	UniqueFd dir_fd = open_cache_dir(dir, false);
	if (!dir_fd)
		return std::nullopt;
	UniqueFd fd(openat(dir_fd.get(), key.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	struct stat st;
	if (!ours_and_private(fd.get(), st) || !S_ISREG(st.st_mode) || uint64_t(st.st_size) < sizeof(FileHeader))
		return std::nullopt;
	// Read whole (read_up_to reads from the start): the size must be what the header says.
	std::vector<uint8_t> bytes(size_t(std::min<uint64_t>(uint64_t(st.st_size), kMaxFileSize)));
	if (read_up_to(fd.get(), bytes.data(), bytes.size()) != uint64_t(st.st_size))
		return std::nullopt;
	FileHeader header;
	std::memcpy(&header, bytes.data(), sizeof(header));
	if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0 || header.version != kFormatVersion ||
	    header.row_size != sizeof(unwind_row) || header.row_count > kMaxUnwindRows ||
	    bytes.size() != sizeof(header) + header.row_count * sizeof(unwind_row) ||
	    header.source[sizeof(header.source) - 1] != '\0')
		return std::nullopt;
	UnwindTable table;
	table.source = header.source;
	if (!known_source(table.source))
		return std::nullopt;
	table.rows.resize(size_t(header.row_count));
	if (!table.rows.empty())
		std::memcpy(table.rows.data(), bytes.data() + sizeof(header), table.rows.size() * sizeof(unwind_row));
	if (!rows_check_out(table.rows))
		return std::nullopt;
	return table;
}

void store_unwind_table(const std::string &dir, const std::string &key, const UnwindTable &table)
{
	if (dir.empty() || !valid_key(key) || table.rows.size() > kMaxUnwindRows || !known_source(table.source))
		return;
	UniqueFd dir_fd = open_cache_dir(dir, true);
	if (!dir_fd)
		return;
	FileHeader header{};
	std::memcpy(header.magic, kMagic, sizeof(kMagic));
	header.version = kFormatVersion;
	header.row_size = sizeof(unwind_row);
	header.row_count = table.rows.size();
	std::memcpy(header.source, table.source.data(), table.source.size());

	// Several threads may store one key at once: each writes its own file.
	static std::atomic<uint64_t> writes{0};
	const std::string temp = key + "." + std::to_string(getpid()) + "." + std::to_string(writes++) + ".tmp";
	UniqueFd fd(openat(dir_fd.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (!fd)
		return;
	const bool ok =
		write_all(fd.get(), std::string_view(reinterpret_cast<const char *>(&header), sizeof(header))) &&
		write_all(fd.get(), std::string_view(reinterpret_cast<const char *>(table.rows.data()),
						     table.rows.size() * sizeof(unwind_row)));
	if (close(fd.release()) != 0 || !ok || renameat(dir_fd.get(), temp.c_str(), dir_fd.get(), key.c_str()) != 0)
		unlinkat(dir_fd.get(), temp.c_str(), 0);
}
