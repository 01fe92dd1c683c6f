// proc/maps.h: a process's memory mappings from /proc/PID/maps, looked up by address.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct MapEntry {
	uint64_t start = 0, end = 0; // [start, end) in the process
	std::array<char, 4> perms{'-', '-', '-', '-'}; // as printed: "r-xp"
	uint64_t offset = 0;         // file offset mapped at start
	uint32_t dev_major = 0, dev_minor = 0;
	uint64_t inode = 0;
	std::string path;            // as printed, without " (deleted)"; "" when anonymous
	bool deleted = false;        // the file was unlinked after it was mapped

	bool executable() const { return perms[2] == 'x'; }
	// Backed by a file on some filesystem (not anonymous, not [heap], [vdso], ...).
	bool file_backed() const { return inode != 0 && !path.empty() && path[0] == '/'; }
	// "[heap]", "[stack]", "[vdso]", "[anon:NAME]": kernel-made areas with a name.
	bool pseudo() const { return !path.empty() && path[0] == '['; }
};

// A file as mappings name it: its device and inode. That pair is the file's identity across
// processes and mount namespaces, where its path is not.
struct FileKey {
	uint32_t major = 0, minor = 0;
	uint64_t inode = 0;
	auto operator<=>(const FileKey &) const = default;
	static FileKey of(const MapEntry &m) { return {m.dev_major, m.dev_minor, m.inode}; }
};

// The very file a live process maps at [start, end), through pid_dir/map_files/START-END
// (pid_dir: "/proc/PID", or a test's fake one): found even deleted, or in another mount
// namespace. map_files_path names the link; open_map_file opens it (-1 when it cannot).
std::string map_files_path(const std::string &pid_dir, uint64_t start, uint64_t end);
std::string map_files_path(uint32_t pid, uint64_t start, uint64_t end);
int open_map_file(const std::string &pid_dir, uint64_t start, uint64_t end);

// True when fd is the file the mapping recorded. A path can name a newer file than the
// one that was mapped (a binary replaced by an upgrade): its symbols would be wrong.
bool same_file(int fd, const MapEntry &mapping);

class ProcessMaps {
public:
	// Parses maps text; lines that do not parse are skipped.
	static ProcessMaps parse(std::string_view text);
	// Reads the file (e.g. /proc/PID/maps); false when it cannot be read (the process is gone).
	static bool load(const std::string &path, ProcessMaps &out);

	// The mapping holding address, or nullptr. Binary search over sorted, disjoint entries.
	const MapEntry *find(uint64_t address) const;
	const std::vector<MapEntry> &entries() const { return entries_; }
	// Whether the process runs code of the file the mapping maps: some mapping of it is
	// executable. A process that only reads a file mapped (a profiler, a debugger reading
	// libjvm.so or node) does not run it.
	bool executes(const MapEntry &m) const;

private:
	std::vector<MapEntry> entries_;
};

// Processes' maps read for one round of questions about them, each read once: the
// runtimes' readers each ask of the same new process whether it runs theirs, at one tick.
class MapsReads {
public:
	// Process pid's maps (/proc/PID/maps), read at its first ask; null when they cannot be
	// read (it is gone).
	const ProcessMaps *of(uint32_t pid);

private:
	std::unordered_map<uint32_t, std::optional<ProcessMaps>> read_;
};

// This process's own vDSO, as an ELF image (empty when it cannot be found). Every 64-bit
// process on the machine maps the same one, and it is nowhere on disk.
std::vector<uint8_t> own_vdso_image();
