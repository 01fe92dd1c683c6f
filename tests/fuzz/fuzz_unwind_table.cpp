// tests/fuzz/fuzz_unwind_table.cpp: compile_unwind_table on any bytes (an object, and after
// kDebugMarker its debug file), then every promise a table makes, and lookups in it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "unwind/table.h"
#include "tests/fuzz/fuzz.h"

namespace {

// What parts an input: the object before it, its debug file after (the seeds of stripped
// objects are built so).
constexpr std::string_view kDebugMarker = "\n--debug-file--\n";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const std::string_view input(reinterpret_cast<const char *>(data), size);
	const size_t marker = input.find(kDebugMarker);
	const size_t object_size = marker == std::string_view::npos ? size : marker;
	// Each part in an exactly sized vector: a read past its end is an ASan report.
	const std::vector<uint8_t> object(data, data + object_size);
	std::vector<uint8_t> debug;
	if (marker != std::string_view::npos)
		debug.assign(data + marker + kDebugMarker.size(), data + size);

	std::optional<UnwindTable> table = compile_unwind_table(object, debug);
	if (!table)
		return 0;
	const std::vector<unwind_row> &rows = table->rows;
	FUZZ_CHECK(rows.size() <= kMaxUnwindRows);
	FUZZ_CHECK(rows.empty() == table->source.empty());
	for (size_t i = 0; i < rows.size(); i++) {
		const unwind_row &row = rows[i];
		FUZZ_CHECK(row.cfa_type <= UNWIND_CFA_END && row.rbp_type <= UNWIND_RBP_UNDEFINED);
		if (row.cfa_type == UNWIND_CFA_NONE || row.cfa_type == UNWIND_CFA_END)
			FUZZ_CHECK(row.cfa_offset == 0 && row.rbp_type == UNWIND_RBP_SAME && row.rbp_offset == 0);
		if (row.cfa_type == UNWIND_CFA_PLT)
			FUZZ_CHECK(row.cfa_offset == 5 || (row.cfa_offset >= 9 && row.cfa_offset <= 11));
		if (i > 0)
			FUZZ_CHECK(rows[i - 1].pc < row.pc && !same_unwind_rule(rows[i - 1], row));
	}
	if (!rows.empty())
		FUZZ_CHECK(rows.back().cfa_type == UNWIND_CFA_NONE);

	// Lookups: before, at and between rows, and the input's choice.
	std::vector<uint64_t> pcs = {0, UINT64_MAX, fuzz_tail_u64(data, size)};
	for (size_t i = 0; i < rows.size() && pcs.size() < 64; i += 1 + rows.size() / 32) {
		pcs.push_back(rows[i].pc);
		pcs.push_back(uint64_t(rows[i].pc) - 1);
		pcs.push_back(uint64_t(rows[i].pc) + 1);
	}
	for (uint64_t pc : pcs) {
		const unwind_row *found = find_unwind_row(rows, pc);
		if (!found) {
			FUZZ_CHECK(rows.empty() || pc < rows.front().pc);
			continue;
		}
		FUZZ_CHECK(found->pc <= pc);
		FUZZ_CHECK(found + 1 == rows.data() + rows.size() || pc < found[1].pc);
	}
	return 0;
}
