// syms/unwind_cache.cpp: unwind tables kept between the runs of one boot, one file each.
#include "syms/unwind_cache.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "syms/fd.h"

namespace {

constexpr char kMagic[8] = {'p', 'r', 'o', 'f', 'u', 'n', 'w', '1'};
constexpr uint32_t kVersion = 1; // of the rows' meaning: a new compiler that changes them bumps it

struct Header {
	char magic[8];
	uint32_t version;
	uint32_t rows;
	char source[16];
};

} // namespace

std::string unwind_table_key(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return "";
	std::string key = "v" + std::to_string(kVersion) + "-";
	if (elf_version(EV_CURRENT) != EV_NONE) {
		struct ElfEnd {
			void operator()(Elf *elf) const { elf_end(elf); }
		};
		std::unique_ptr<Elf, ElfEnd> elf(elf_begin(fd, ELF_C_READ, nullptr));
		const void *id = nullptr;
		const ssize_t size = elf ? dwelf_elf_gnu_build_id(elf.get(), &id) : -1;
		if (size >= 8 && size <= 64) {
			static const char hex[] = "0123456789abcdef";
			key += "b";
			for (ssize_t i = 0; i < size; i++) {
				const uint8_t byte = static_cast<const uint8_t *>(id)[i];
				key += hex[byte >> 4];
				key += hex[byte & 15];
			}
			return key;
		}
	}
	return key + "f" + std::to_string(st.st_dev) + "-" + std::to_string(st.st_ino) + "-" +
	       std::to_string(st.st_size) + "-" + std::to_string(st.st_mtim.tv_sec) + "." +
	       std::to_string(st.st_mtim.tv_nsec);
}

std::optional<UnwindTable> load_cached_unwind_table(const std::string &cache_dir, const std::string &key)
{
	if (cache_dir.empty() || key.empty() || key.find('/') != std::string::npos)
		return std::nullopt;
	UniqueFd dir = open_private_dir(cache_dir);
	if (!dir)
		return std::nullopt;
	UniqueFd fd(openat(dir.get(), key.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	struct stat st;
	if (!ours_and_private(fd.get(), st) || !S_ISREG(st.st_mode) || size_t(st.st_size) < sizeof(Header) ||
	    (uint64_t(st.st_size) - sizeof(Header)) % sizeof(unwind_row) != 0 ||
	    uint64_t(st.st_size) > sizeof(Header) + (uint64_t(UINT32_MAX) * sizeof(unwind_row)))
		return std::nullopt;
	std::vector<uint8_t> bytes(size_t(st.st_size));
	if (read_up_to(fd.get(), bytes.data(), bytes.size()) != bytes.size())
		return std::nullopt;
	Header header;
	std::memcpy(&header, bytes.data(), sizeof(header));
	if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0 || header.version != kVersion ||
	    bytes.size() != sizeof(header) + uint64_t(header.rows) * sizeof(unwind_row))
		return std::nullopt;
	UnwindTable table;
	table.rows.resize(header.rows);
	std::memcpy(table.rows.data(), bytes.data() + sizeof(header), table.rows.size() * sizeof(unwind_row));
	table.source.assign(header.source, strnlen(header.source, sizeof(header.source)));
	return table;
}

void store_unwind_table(const std::string &cache_dir, const std::string &key, const UnwindTable &table)
{
	if (cache_dir.empty() || key.empty() || key.find('/') != std::string::npos || table.rows.size() > UINT32_MAX)
		return;
	UniqueFd dir = open_private_dir(cache_dir);
	if (!dir)
		return;
	Header header{};
	std::memcpy(header.magic, kMagic, sizeof(kMagic));
	header.version = kVersion;
	header.rows = uint32_t(table.rows.size());
	std::strncpy(header.source, table.source.c_str(), sizeof(header.source) - 1);
	const std::string temp = key + "." + std::to_string(getpid()) + "." + std::to_string(gettid()) + ".tmp";
	UniqueFd fd(openat(dir.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (!fd)
		return;
	const bool ok =
		write_all(fd.get(), std::string_view(reinterpret_cast<const char *>(&header), sizeof(header))) &&
		write_all(fd.get(), std::string_view(reinterpret_cast<const char *>(table.rows.data()),
						     table.rows.size() * sizeof(unwind_row)));
	if (close(fd.release()) != 0 || !ok || renameat(dir.get(), temp.c_str(), dir.get(), key.c_str()) != 0)
		unlinkat(dir.get(), temp.c_str(), 0);
}
