// tests/fuzz/fuzz_unwind_cache.cpp: parse_unwind_cache_file on any bytes, whole and as
// pruning reads a file's head, then every promise a table read from the cache makes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "unwind/cache.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// A copy of exactly the input's size, so a read past the file is an ASan report.
	const std::vector<uint8_t> file(data, data + size);
	const Result<UnwindCacheFile> whole = parse_unwind_cache_file(file, file.size(), true);
	FUZZ_CHECK(whole.ok() == whole.error().empty()); // refused, with a line saying why, or read

	// Pruning reads at most the head (header, key, path) and knows the file's size.
	const std::vector<uint8_t> head(file.begin(), file.begin() + std::min<size_t>(file.size(), 104 + 200 + 4095));
	const Result<UnwindCacheFile> front = parse_unwind_cache_file(head, file.size(), false);
	if (!whole.ok())
		return 0;
	FUZZ_CHECK(front.ok() && front->key == whole->key && front->origin.path == whole->origin.path);
	FUZZ_CHECK(front->table.rows.empty());

	// The key is one a writer gives, its name the short one, and the path absolute or none.
	const std::string &key = whole->key;
	FUZZ_CHECK(!key.empty() && key.size() <= 200 && key.find('/') == std::string::npos && key[0] != '.');
	FUZZ_CHECK(unwind_cache_file_name(key).size() == 35);
	FUZZ_CHECK(whole->origin.path.empty() || whole->origin.path[0] == '/');
	fuzz_touch(whole->origin.path.data(), whole->origin.path.size());

	// The rows: as many as the file holds, in order, of known kinds, a gap last.
	const std::vector<unwind_row> &rows = whole->table.rows;
	FUZZ_CHECK(rows.size() <= kMaxUnwindRows);
	FUZZ_CHECK(104 + key.size() + whole->origin.path.size() + rows.size() * sizeof(unwind_row) == size);
	for (size_t i = 0; i < rows.size(); i++) {
		FUZZ_CHECK(rows[i].cfa_type <= UNWIND_CFA_END && rows[i].rbp_type <= UNWIND_RBP_UNDEFINED);
		if (i > 0)
			FUZZ_CHECK(rows[i - 1].pc < rows[i].pc);
	}
	if (!rows.empty()) {
		FUZZ_CHECK(rows.back().cfa_type == UNWIND_CFA_NONE);
		const unwind_row *found = find_unwind_row(rows, fuzz_tail_u64(data, size));
		FUZZ_CHECK(!found || (found >= rows.data() && found < rows.data() + rows.size()));
	}
	return 0;
}
