// unwind/cache.cpp: compiled unwind tables kept on disk across runs and boots, one file
// per object, pruned to a size.
#include "unwind/cache.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "elf/elf_handles.h"
#include "base/fd.h"

namespace {

// Changes whenever what a file holds, or how rows are compiled, does: old files then miss
// (their names differ) and pruning removes them.
constexpr uint32_t kFormatVersion = 3;
constexpr char kMagic[8] = {'P', 'R', 'O', 'F', 'U', 'W', 'T', '\n'};
constexpr size_t kMaxKeySize = 200;
constexpr size_t kMaxPathSize = 4095;
constexpr std::string_view kNamePrefix = "u3-";
constexpr size_t kHashDigits = 32;
constexpr std::string_view kTempSuffix = ".tmp";
// A temporary file older than this was left by a writer that crashed: writing one takes
// milliseconds.
constexpr int64_t kStaleTempSeconds = 60;

struct FileHeader {
	char magic[8];
	uint32_t version;
	uint32_t row_size;
	uint64_t row_count;
	char source[32]; // UnwindTable::source, NUL-padded
	uint16_t key_size;
	uint16_t path_size;
	uint32_t reserved; // 0
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};
// Then key_size bytes of key, path_size of the object's path, row_count rows.
static_assert(sizeof(FileHeader) == 104);
constexpr uint64_t kMaxHeadSize = sizeof(FileHeader) + kMaxKeySize + kMaxPathSize;
constexpr uint64_t kMaxFileSize = kMaxHeadSize + kMaxUnwindRows * sizeof(unwind_row);

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

// Keys are kept whole in the file and compared on load: printable, short, no '/'.
bool valid_key(std::string_view key)
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

// A name unwind_cache_file_name gives: the prefix and kHashDigits lowercase hex digits.
bool entry_name(std::string_view name)
{
	if (name.size() != kNamePrefix.size() + kHashDigits || !name.starts_with(kNamePrefix))
		return false;
	return std::all_of(name.begin() + kNamePrefix.size(), name.end(),
			   [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string errno_line(const std::string &what)
{
	return what + ": " + std::strerror(errno);
}

// The cache directory, open, and the user it belongs to.
struct CacheDir {
	UniqueFd fd;
	uid_t owner = 0;
};

// The cache directory (and its parent, if missing, when create is set), when it is a real
// directory, private, and ours; or, for root, another user's: the agent's unit runs as a
// user of its own (DynamicUser=), whose CacheDirectory= is the /var/cache/profile that root's
// runs use, and only root or systemd can have given a directory there to another user.
// Nothing when the directory is simply not there and create is not set; else what is wrong.
Result<std::optional<CacheDir>> open_cache_dir(const std::string &dir, bool create)
{
	if (create) {
		const size_t slash = dir.find_last_of('/');
		if (slash != std::string::npos && slash > 0)
			mkdir(dir.substr(0, slash).c_str(), 0700);
		if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
			return Error(errno_line(dir));
	}
	CacheDir cache{UniqueFd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))};
	if (!cache.fd) {
		// O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR: say which it is.
		struct stat link;
		const int error = errno;
		if (error == ENOENT && !create)
			return std::nullopt;
		if (lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
			return Error(dir + " is a symlink");
		errno = error;
		return Error(errno_line(dir));
	}
	struct stat st;
	if (fstat(cache.fd.get(), &st) != 0)
		return Error(errno_line(dir));
	char line[160];
	if (st.st_uid != geteuid() && geteuid() != 0) {
		std::snprintf(line, sizeof(line), " is owned by uid %u, not by this run's uid %u", unsigned(st.st_uid),
			      unsigned(geteuid()));
		return Error(dir + line);
	}
	if (st.st_mode & 077) {
		std::snprintf(line, sizeof(line), " is open to others (mode %04o, not 0700)", unsigned(st.st_mode & 07777));
		return Error(dir + line);
	}
	cache.owner = st.st_uid;
	return cache;
}

// A file of the cache that may be read: private (0600) to this run's user or to the
// directory's (root reads the agent's tables, and the agent root's, chowned to it).
bool private_cache_file(int fd, struct stat &st, const CacheDir &dir)
{
	return fd >= 0 && fstat(fd, &st) == 0 && (st.st_uid == geteuid() || st.st_uid == dir.owner) &&
	       !(st.st_mode & 077);
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

// 64 bits of avalanche (splitmix64's finalizer).
uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct DirCloser {
	void operator()(DIR *d) const { closedir(d); }
};

// Whether the object an entry was built from is still there, as origin names it: its path
// holds the same file, or one with the same key (a build id reinstalled). An entry with no
// path (a container's file, one deleted while mapped) is left to the size cap.
bool object_still_there(const UnwindCacheFile &entry)
{
	const UnwindCacheOrigin &o = entry.origin;
	if (o.path.empty())
		return true;
	struct stat st;
	if (stat(o.path.c_str(), &st) != 0)
		return !(errno == ENOENT || errno == ENOTDIR);
	if (uint64_t(st.st_dev) == o.dev && uint64_t(st.st_ino) == o.ino && uint64_t(st.st_size) == o.size &&
	    int64_t(st.st_mtim.tv_sec) == o.mtime_sec && int64_t(st.st_mtim.tv_nsec) == o.mtime_nsec)
		return true;
	UniqueFd fd(open(o.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
	return fd && unwind_table_key(fd.get()) == entry.key;
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

// Two 64-bit FNV-1a style streams with their own primes, each finished by mix64: not a
// cryptographic hash, and it need not be one, the key in the file decides.
std::string unwind_cache_file_name(const std::string &key)
{
	uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull ^ key.size();
	for (unsigned char c : key) {
		a = (a ^ c) * 0x100000001b3ull;
		b = (b ^ c) * 0x9e3779b97f4a7c15ull;
		b ^= b >> 32;
	}
	a = mix64(a ^ key.size());
	b = mix64(b ^ a);
	char name[64];
	std::snprintf(name, sizeof(name), "%.*s%016" PRIx64 "%016" PRIx64, int(kNamePrefix.size()), kNamePrefix.data(),
		      a, b);
	return name;
}

UnwindCacheOrigin unwind_cache_origin(const std::string &path, const struct stat &st)
{
	UnwindCacheOrigin origin;
	origin.path = path.size() <= kMaxPathSize && path.starts_with('/') && path.find('\0') == std::string::npos
			      ? path
			      : "";
	origin.dev = uint64_t(st.st_dev);
	origin.ino = uint64_t(st.st_ino);
	origin.size = uint64_t(st.st_size);
	origin.mtime_sec = int64_t(st.st_mtim.tv_sec);
	origin.mtime_nsec = int64_t(st.st_mtim.tv_nsec);
	return origin;
}

Result<UnwindCacheFile> parse_unwind_cache_file(std::span<const uint8_t> bytes, uint64_t file_size, bool rows)
{
	char line[160];
	if (bytes.size() < sizeof(FileHeader) || file_size < sizeof(FileHeader)) {
		std::snprintf(line, sizeof(line), "cut short (%" PRIu64 " bytes)", file_size);
		return Error(line);
	}
	FileHeader header;
	std::memcpy(&header, bytes.data(), sizeof(header));
	if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0)
		return Error("not an unwind cache file");
	if (header.version != kFormatVersion || header.row_size != sizeof(unwind_row)) {
		std::snprintf(line, sizeof(line), "of format %u with %u-byte rows, not %u with %zu", header.version,
			      header.row_size, kFormatVersion, sizeof(unwind_row));
		return Error(line);
	}
	if (header.row_count > kMaxUnwindRows || header.key_size == 0 || header.key_size > kMaxKeySize ||
	    header.path_size > kMaxPathSize || header.reserved != 0 ||
	    header.source[sizeof(header.source) - 1] != '\0')
		return Error("a header out of bounds");
	const uint64_t head = sizeof(FileHeader) + header.key_size + header.path_size;
	const uint64_t whole = head + header.row_count * sizeof(unwind_row);
	if (file_size != whole || bytes.size() < head || (rows && bytes.size() != whole)) {
		std::snprintf(line, sizeof(line), "%" PRIu64 " bytes where its header says %" PRIu64, file_size, whole);
		return Error(line);
	}
	UnwindCacheFile file;
	const char *text = reinterpret_cast<const char *>(bytes.data());
	file.key.assign(text + sizeof(FileHeader), header.key_size);
	file.origin.path.assign(text + sizeof(FileHeader) + header.key_size, header.path_size);
	if (!valid_key(file.key) ||
	    (!file.origin.path.empty() &&
	     (file.origin.path[0] != '/' || file.origin.path.find('\0') != std::string::npos)))
		return Error("a key or path that no writer gives");
	file.origin.dev = header.dev;
	file.origin.ino = header.ino;
	file.origin.size = header.size;
	file.origin.mtime_sec = header.mtime_sec;
	file.origin.mtime_nsec = header.mtime_nsec;
	file.table.source = header.source;
	if (!known_source(file.table.source))
		return Error("a source no table has");
	if (!rows)
		return file;
	file.table.rows.resize(size_t(header.row_count));
	if (!file.table.rows.empty())
		std::memcpy(file.table.rows.data(), bytes.data() + head, file.table.rows.size() * sizeof(unwind_row));
	if (!rows_check_out(file.table.rows))
		return Error("rows out of order or of unknown kinds");
	return file;
}

Result<std::optional<UnwindTable>> load_cached_unwind_table(const std::string &dir, const std::string &key)
{
	if (dir.empty() || !valid_key(key))
		return std::nullopt;
	// A directory that cannot be used is a miss: storing says why.
	Result<std::optional<CacheDir>> opened = open_cache_dir(dir, false);
	if (!opened.ok() || !*opened)
		return std::nullopt;
	const CacheDir &cache = **opened;
	const int dir_fd = cache.fd.get();
	const std::string name = unwind_cache_file_name(key);
	const std::string path = dir + "/" + name;
	UniqueFd fd(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (!fd) {
		if (errno == ENOENT)
			return std::nullopt;
		return Error(errno == ELOOP ? path + " is a symlink" : errno_line(path));
	}
	struct stat st;
	if (!private_cache_file(fd.get(), st, cache) || !S_ISREG(st.st_mode))
		return Error(path + " is not a private file of this run's user or the cache's");
	if (uint64_t(st.st_size) > kMaxFileSize)
		return Error(path + " is larger than any table");
	// Read whole (read_up_to reads from the start): the size must be what the header says.
	std::vector<uint8_t> bytes(size_t(st.st_size));
	const size_t got = read_up_to(fd.get(), bytes.data(), bytes.size());
	bytes.resize(got);
	Result<UnwindCacheFile> file = parse_unwind_cache_file(bytes, got, true);
	if (!file.ok())
		return Error(path + " is " + file.error());
	if (file->key != key)
		return Error(path + " holds the table of another key (" + file->key + ")");
	// Used now: pruning removes the least recently used first. The mtime, not the atime,
	// which reads may or may not update (noatime, relatime).
	const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
	futimens(fd.get(), times);
	return std::move(file->table);
}

Status store_unwind_table(const std::string &dir, const std::string &key, const UnwindTable &table,
			  const UnwindCacheOrigin &origin)
{
	if (dir.empty() || !valid_key(key) || table.rows.size() > kMaxUnwindRows || !known_source(table.source))
		return {};
	Result<std::optional<CacheDir>> opened = open_cache_dir(dir, true);
	if (!opened.ok())
		return opened.status();
	const CacheDir &cache = **opened; // created: there
	const int dir_fd = cache.fd.get();
	const bool has_path = origin.path.size() <= kMaxPathSize && origin.path.starts_with('/') &&
			      origin.path.find('\0') == std::string::npos;
	FileHeader header{};
	std::memcpy(header.magic, kMagic, sizeof(kMagic));
	header.version = kFormatVersion;
	header.row_size = sizeof(unwind_row);
	header.row_count = table.rows.size();
	std::memcpy(header.source, table.source.data(), table.source.size());
	header.key_size = uint16_t(key.size());
	header.path_size = has_path ? uint16_t(origin.path.size()) : 0;
	header.dev = origin.dev;
	header.ino = origin.ino;
	header.size = origin.size;
	header.mtime_sec = origin.mtime_sec;
	header.mtime_nsec = origin.mtime_nsec;
	std::string head(reinterpret_cast<const char *>(&header), sizeof(header));
	head += key;
	if (has_path)
		head += origin.path;

	// Any number of threads and processes may store one key at once: each writes a file of
	// its own (pid and a count; another pid namespace may have the same pid, hence the
	// retries), and the last rename wins whole. No fsync: a file cut short by a crash is a
	// miss, its size being checked.
	static std::atomic<uint64_t> writes{0};
	const std::string name = unwind_cache_file_name(key);
	std::string temp;
	UniqueFd fd;
	for (int attempt = 0; attempt < 8 && !fd; attempt++) {
		temp = name + "." + std::to_string(getpid()) + "." + std::to_string(writes++) + std::string(kTempSuffix);
		fd.reset(openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
		if (!fd && errno != EEXIST)
			break;
	}
	if (!fd)
		return Error(errno_line(dir));
	const bool ok = write_all(fd.get(), head) &&
			write_all(fd.get(), std::string_view(reinterpret_cast<const char *>(table.rows.data()),
							     table.rows.size() * sizeof(unwind_row)));
	int error = ok ? 0 : errno;
	// Root writing into the agent's directory: the file becomes the agent's, which can then
	// read it, and prune it, like its own.
	if (!error && cache.owner != geteuid() && fchown(fd.get(), cache.owner, gid_t(-1)) != 0)
		error = errno;
	if (close(fd.release()) != 0 && !error)
		error = errno;
	if (!error && renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0)
		error = errno;
	if (!error)
		return {};
	unlinkat(dir_fd, temp.c_str(), 0);
	errno = error;
	return Error(errno_line(dir));
}

UnwindCachePrune prune_unwind_cache(const std::string &dir, uint64_t max_bytes, const std::atomic<bool> *stop)
{
	UnwindCachePrune result;
	if (dir.empty())
		return result;
	Result<std::optional<CacheDir>> opened = open_cache_dir(dir, false);
	if (!opened.ok())
		result.status = opened.status();
	if (!opened.ok() || !*opened)
		return result;
	const CacheDir &cache = **opened;
	const int dir_fd = cache.fd.get();
	UniqueFd list_fd(fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
	std::unique_ptr<DIR, DirCloser> list(list_fd ? fdopendir(list_fd.get()) : nullptr);
	if (!list) {
		result.status = Error(errno_line(dir));
		return result;
	}
	list_fd.release(); // the DIR owns it now

	auto remove = [&](const char *name, uint32_t &count) {
		if (unlinkat(dir_fd, name, 0) == 0)
			count++;
		else if (result.status.ok() && errno != ENOENT) // ENOENT: another run pruned it
			result.status = Error(errno_line(dir));
	};
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct Entry {
		std::string name;
		uint64_t size;
		struct timespec used;
	};
	std::vector<Entry> entries;
	std::vector<uint8_t> head(kMaxHeadSize);
	while (const dirent *d = readdir(list.get())) {
		if (stop && stop->load(std::memory_order_relaxed)) {
			result.stopped = true;
			return result;
		}
		const std::string_view name = d->d_name;
		if (name == "." || name == "..")
			continue;
		struct stat st;
		if (fstatat(dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
			continue;
		if (name.ends_with(kTempSuffix) && S_ISREG(st.st_mode)) {
			if (now.tv_sec - st.st_mtim.tv_sec > kStaleTempSeconds)
				remove(d->d_name, result.temporary);
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			remove(d->d_name, result.bad);
			continue;
		}
		// Another version's file (u2-...): an older profile may still run beside this one
		// (the agent before its restart, another build), so it stays within the size like
		// any entry and goes when it is among the least recently used.
		if (!entry_name(name)) {
			entries.push_back({std::string(name), uint64_t(st.st_size), st.st_mtim});
			continue;
		}
		UniqueFd fd(openat(dir_fd, d->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
		struct stat fst;
		const size_t got = fd && private_cache_file(fd.get(), fst, cache)
					   ? read_up_to(fd.get(), head.data(), size_t(std::min<uint64_t>(kMaxHeadSize, fst.st_size)))
					   : 0;
		// Nothing read (not a private file, or an empty one) is a file cut short.
		const Result<UnwindCacheFile> entry =
			parse_unwind_cache_file(std::span(head.data(), got), got ? uint64_t(fst.st_size) : 0, false);
		if (!entry.ok() || unwind_cache_file_name(entry->key) != name) {
			remove(d->d_name, result.bad);
			continue;
		}
		if (!object_still_there(*entry)) {
			remove(d->d_name, result.stale);
			continue;
		}
		entries.push_back({std::string(name), uint64_t(fst.st_size), fst.st_mtim});
	}

	// Least recently used first (a hit sets the mtime); the name breaks ties.
	std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
		return std::tie(a.used.tv_sec, a.used.tv_nsec, a.name) < std::tie(b.used.tv_sec, b.used.tv_nsec, b.name);
	});
	uint64_t total = 0;
	for (const Entry &e : entries)
		total += e.size;
	for (const Entry &e : entries) {
		if (total <= max_bytes) {
			result.kept++;
			result.kept_bytes += e.size;
			continue;
		}
		const uint32_t before = result.evicted;
		remove(e.name.c_str(), result.evicted);
		total -= e.size;
		if (result.evicted == before) { // not removed: it still takes its room
			result.kept++;
			result.kept_bytes += e.size;
		}
	}
	return result;
}
