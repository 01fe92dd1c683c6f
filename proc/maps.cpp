// proc/maps.cpp: a process's memory mappings from /proc/PID/maps, looked up by address.
#include "proc/maps.h"

#include <linux/magic.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <fcntl.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "base/fd.h"
#include "proc/lines.h"

namespace {

// Reads digits of the given base from s, advancing it; false when there are none.
bool parse_number(std::string_view &s, int base, uint64_t &value)
{
	value = 0;
	size_t i = 0;
	for (; i < s.size() && i < 20; i++) {
		char c = s[i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		value = value * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
	}
	if (i == 0)
		return false;
	s.remove_prefix(i);
	return true;
}

bool skip(std::string_view &s, char c)
{
	if (s.empty() || s[0] != c)
		return false;
	s.remove_prefix(1);
	return true;
}

// "START-END PERMS OFFSET MAJOR:MINOR INODE   PATH". The path runs to the end of the line
// and may hold spaces, so it is taken whole after the padding that follows the inode.
bool parse_line(std::string_view line, MapEntry &entry)
{
	uint64_t major, minor;
	if (!parse_number(line, 16, entry.start) || !skip(line, '-') ||
	    !parse_number(line, 16, entry.end) || !skip(line, ' ') || line.size() < 5 || line[4] != ' ')
		return false;
	std::copy_n(line.begin(), 4, entry.perms.begin());
	line.remove_prefix(5);
	if (!parse_number(line, 16, entry.offset) || !skip(line, ' ') || !parse_number(line, 16, major) ||
	    !skip(line, ':') || !parse_number(line, 16, minor) || !skip(line, ' ') ||
	    !parse_number(line, 10, entry.inode))
		return false;
	if (entry.end <= entry.start || major > UINT32_MAX || minor > UINT32_MAX)
		return false;
	entry.dev_major = static_cast<uint32_t>(major);
	entry.dev_minor = static_cast<uint32_t>(minor);
	if (!line.empty() && line[0] != ' ')
		return false;
	while (!line.empty() && line[0] == ' ')
		line.remove_prefix(1);
	constexpr std::string_view deleted_suffix = " (deleted)";
	if (line.size() > deleted_suffix.size() && line.ends_with(deleted_suffix)) {
		line.remove_suffix(deleted_suffix.size());
		entry.deleted = true;
	}
	entry.path = line;
	return true;
}

} // namespace

ProcessMaps ProcessMaps::parse(std::string_view text)
{
	ProcessMaps maps;
	for_each_line(text, [&](std::string_view line) {
		MapEntry entry;
		if (parse_line(line, entry))
			maps.entries_.push_back(std::move(entry));
	});
	// The kernel prints maps in address order; sorting anyway keeps find() correct for
	// hand-written text.
	if (!std::is_sorted(maps.entries_.begin(), maps.entries_.end(),
			    [](const MapEntry &a, const MapEntry &b) { return a.start < b.start; }))
		std::sort(maps.entries_.begin(), maps.entries_.end(),
			  [](const MapEntry &a, const MapEntry &b) { return a.start < b.start; });
	return maps;
}

bool ProcessMaps::load(const std::string &path, ProcessMaps &out)
{
	std::string text;
	if (!read_whole_file(path.c_str(), text))
		return false;
	out = parse(text);
	return true;
}

const ProcessMaps *MapsReads::of(uint32_t pid)
{
	auto [at, added] = read_.try_emplace(pid);
	if (added) {
		ProcessMaps maps;
		if (ProcessMaps::load("/proc/" + std::to_string(pid) + "/maps", maps))
			at->second = std::move(maps);
	}
	return at->second ? &*at->second : nullptr;
}

const MapEntry *ProcessMaps::find(uint64_t address) const
{
	auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
				   [](uint64_t a, const MapEntry &e) { return a < e.start; });
	if (it == entries_.begin())
		return nullptr;
	--it;
	return address < it->end ? &*it : nullptr;
}

bool ProcessMaps::executes(const MapEntry &m) const
{
	const FileKey file = FileKey::of(m);
	return std::any_of(entries_.begin(), entries_.end(),
			   [&](const MapEntry &e) { return e.executable() && FileKey::of(e) == file && e.path == m.path; });
}

std::string map_files_path(const std::string &pid_dir, uint64_t start, uint64_t end)
{
	char range[64];
	std::snprintf(range, sizeof(range), "/map_files/%" PRIx64 "-%" PRIx64, start, end);
	return pid_dir + range;
}

std::string map_files_path(uint32_t pid, uint64_t start, uint64_t end)
{
	return map_files_path("/proc/" + std::to_string(pid), start, end);
}

int open_map_file(const std::string &pid_dir, uint64_t start, uint64_t end)
{
	return open(map_files_path(pid_dir, start, end).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

bool same_file(int fd, const MapEntry &mapping)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != mapping.inode)
		return false;
	if (major(st.st_dev) == mapping.dev_major && minor(st.st_dev) == mapping.dev_minor)
		return true;
	// btrfs subvolumes and overlayfs show stat() another device than the one mappings
	// record; the inode number still tells.
	struct statfs fs;
	return fstatfs(fd, &fs) == 0 && (fs.f_type == BTRFS_SUPER_MAGIC || fs.f_type == OVERLAYFS_SUPER_MAGIC);
}

std::vector<uint8_t> own_vdso_image()
{
	const uint64_t base = getauxval(AT_SYSINFO_EHDR);
	ProcessMaps own;
	if (base == 0 || !ProcessMaps::load("/proc/self/maps", own))
		return {};
	const MapEntry *entry = own.find(base);
	if (!entry || entry->path != "[vdso]")
		return {};
	const uint8_t *image = reinterpret_cast<const uint8_t *>(entry->start);
	return std::vector<uint8_t>(image, image + (entry->end - entry->start));
}
