// proc/perf_map.h: JIT-compiled function names from /tmp/perf-PID.map, looked up by address.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The file JIT compilers write for perf (node --perf-basic-prof, the JVM's perf-map-agent,
// LuaJIT, ...): one "START SIZE NAME" line per function, START and SIZE in hex.
class PerfMap {
public:
	struct Symbol {
		uint64_t start = 0, end = 0; // [start, end) in the process, as the line gave it
		std::string name;
	};

	// Parses perf map text; lines that do not parse are skipped. Where functions overlap
	// (a JIT reuses freed code space) the line written last wins.
	static PerfMap parse(std::string_view text);

	// Reads the perf map at path when it is a regular file owned by root or by `owner`,
	// the process's user: never through a symlink (whoever can write /tmp could point one
	// at any file) and never another user's file (whoever can write /tmp could make one
	// for any PID). root_dir: a directory the path resolves under, with no symlink anywhere
	// on the way (a container's root); -1 for a plain path.
	static std::optional<PerfMap> load(const std::string &path, uid_t owner, int root_dir = -1);
	static constexpr uint64_t kMaxSize = 256ull << 20;

	// The function holding address, or nullptr.
	const Symbol *find(uint64_t address) const;
	size_t size() const { return symbols_.size(); }

private:
	// What is left of each function once the later lines took their share: sorted,
	// disjoint, each naming its symbol.
	struct Piece {
		uint64_t start, end;
		uint32_t symbol;
	};
	std::vector<Symbol> symbols_;
	std::vector<Piece> pieces_;
};
