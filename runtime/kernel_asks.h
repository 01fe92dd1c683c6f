// runtime/kernel_asks.h: what a runtime's kernel walk asks of its user half, through two
// maps every runtime has: the processes it met and cannot tell yet (a hash of pids, which
// user space answers and empties), and what it met for the first time (a ring buffer of
// fixed-size records, named while their process lives).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <linux/types.h>

#include "runtime/runtime.h"

// A kernel map's fd by its name in the sampling program, -1 when it has none.
using MapFdByName = std::function<int(const char *name)>;

// Attaches the loaded program's uprobe `program` (a runtime's: SEC("uprobe/runtime")) at
// `offset` in the file at `path`, in every process sampled that maps the file, until the
// run's programs are detached; false (errno set) when it cannot be (once they are detached
// too).
using AttachUprobe = std::function<bool(const char *program, const std::string &path, uint64_t offset)>;

// What a runtime's reader is given of the loaded program: its maps, and its uprobes to
// attach (none when empty: a reader then does without them).
struct RuntimeKernel {
	MapFdByName map_fd;
	AttachUprobe attach_uprobe = {};
};

// A runtime's kernel maps, as every runtime's walk has them, each named for the runtime
// ("python_processes"): the processes as user space classified them, those the walk asked
// about, what it told user space of (RUNTIME_CODES_MAP, or the runtime's own), and the ring
// of what it met for the first time; and, for a RUNTIME_CODES_MAP, the generation of the codes
// map that its per-CPU front of it checks (-1 for a runtime's own map, which has none).
struct RuntimeMaps {
	int processes = -1, wanted = -1, codes = -1, seen = -1, generation = -1;
	// The maps named for `prefix`; nothing when the program lacks one of them.
	static std::optional<RuntimeMaps> named(const MapFdByName &map_fd, const std::string &prefix);
};

// Each pid the walk asked about since the last call (the hash map_fd), answered, then
// taken out of the hash: one asked again meanwhile is not asked twice.
void answer_asked_pids(int map_fd, const std::function<void(uint32_t pid)> &answer);

// Takes out of a runtime's map of objects told to user space (RUNTIME_CODES_MAP, or one whose
// key starts as struct runtime_code_key's, pid first, 16 bytes) those of process pid: a new
// image under the same pid (exec) has its objects told afresh. Then moves the map's
// generation on: the kernel's front of the map forgets them too.
void forget_runtime_codes(const RuntimeMaps &maps, uint32_t pid);

// The ring buffer of records the walk met for the first time.
class SeenRecords {
public:
	// record_size: the records' size; a shorter one is left out.
	SeenRecords(int map_fd, size_t record_size);
	~SeenRecords();
	SeenRecords(const SeenRecords &) = delete;
	SeenRecords &operator=(const SeenRecords &) = delete;

	// Every record written since the last call, as its bytes.
	const std::vector<std::vector<uint8_t>> &take();

private:
	struct ring_buffer *ring_ = nullptr;
	size_t record_size_;
	std::vector<std::vector<uint8_t>> records_;
};

// take() of a ring of Records.
template <typename Record>
std::vector<Record> take_seen(SeenRecords &seen)
{
	std::vector<Record> records;
	for (const std::vector<uint8_t> &bytes : seen.take()) {
		records.emplace_back();
		std::memcpy(&records.back(), bytes.data(), sizeof(Record));
	}
	return records;
}

// What a runtime's user half keeps with the name of each id the walk told it of: its
// object's key in the kernel's map (RUNTIME_CODES_MAP, or one keyed alike), and the window
// of a continuous run in which a frame was last named by it.
struct KeptCode {
	runtime_code_key key{};
	mutable uint64_t window = 0;
};

// Windows an id is kept unnamed by any frame: a minute of the agent's 15 s windows.
constexpr uint64_t kKeptWindows = 4;

// Takes an object out of a runtime's map of objects told to user space, and moves the map's
// generation on: the walk tells of it again, under a new id, when it meets it next.
void forget_runtime_code(const RuntimeMaps &maps, const runtime_code_key &key);

// What forgets an object in the kernel's map: forget_runtime_code on the runtime's maps
// (forgetting_in), as its reader hands it to its names, which call no BPF function.
using ForgetCode = std::function<void(const runtime_code_key &key)>;
ForgetCode forgetting_in(const RuntimeMaps &maps);

// After a continuous run's window `window`: takes out of `names` (by id, each value with a
// KeptCode `kept`) those no frame was named by in the last kKeptWindows windows, and forgets
// their objects in the kernel's map, so that a long run's memory stays flat while its
// processes make code and drop it.
template <typename Map>
void forget_unnamed_codes(Map &names, uint64_t window, const ForgetCode &forget)
{
	std::erase_if(names, [&](const auto &entry) {
		if (entry.second.kept.window + kKeptWindows >= window)
			return false;
		forget(entry.second.kept.key);
		return true;
	});
}
