// v8/names.cpp: V8's heap objects read from a live process, and JS frames named from them.
#include "v8/names.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "proc/memory.h"

namespace {

constexpr uint64_t kInlinedShift = 31;
constexpr size_t kMaxLines = 1 << 20;      // line ends read of a script
constexpr size_t kMaxSource = 16 << 20;    // source bytes read to count them, when V8 has none
constexpr size_t kMaxTable = 1 << 20;      // bytes of a position table
constexpr int64_t kMaxCodeDelta = int64_t(1) << 33;     // a position table's deltas
constexpr int64_t kMaxPositionDelta = int64_t(1) << 48;
constexpr int kMaxStringPieces = 256;      // objects read of one string (cons, thin, sliced)
// V8's instance-type bit of an external string without the cached address of its
// characters (instance-type.h, unchanged from V8 7 to 13).
constexpr uint16_t kUncachedExternalStringMask = 1 << 4;
constexpr size_t kMaxInlinings = 1024;     // inlined functions read of one code object
constexpr size_t kInliningSize = 16;       // an InliningPosition: SourcePosition, int, padding

bool is_small_integer(uint64_t word)
{
	return (word & 1) == 0;
}

uint32_t small_integer(uint64_t word)
{
	return uint32_t(word >> 32);
}

// An unsigned VLQ at `at` (advanced past it); nothing past the table's end.
std::optional<uint64_t> read_vlq(std::span<const uint8_t> table, size_t &at)
{
	uint64_t value = 0;
	for (int shift = 0; shift < 64 && at < table.size(); shift += 7) {
		const uint8_t byte = table[at++];
		value |= uint64_t(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return value;
	}
	return std::nullopt;
}

std::optional<int64_t> read_zigzag(std::span<const uint8_t> table, size_t &at)
{
	const auto value = read_vlq(table, at);
	if (!value)
		return std::nullopt;
	return int64_t((*value >> 1) ^ -(*value & 1));
}

} // namespace

std::vector<V8Position> v8_positions(std::span<const uint8_t> table, size_t max_entries)
{
	std::vector<V8Position> out;
	int64_t code = -1, position = 0;
	size_t at = 0;
	while (at < table.size() && out.size() < max_entries) {
		const auto code_delta = read_zigzag(table, at);
		const auto position_delta = read_zigzag(table, at);
		// Deltas past what a code offset (32 bits) or a SourcePosition (48) can span are
		// not V8's: the table is read no further.
		if (!code_delta || !position_delta || *code_delta > kMaxCodeDelta || *code_delta < -kMaxCodeDelta ||
		    *position_delta > kMaxPositionDelta || *position_delta < -kMaxPositionDelta)
			break;
		// A negative code delta marks a statement position: the code offset is -delta - 1.
		code += *code_delta >= 0 ? *code_delta : -(*code_delta + 1);
		position += *position_delta;
		if (code < 0 || code > UINT32_MAX || position < 0 || position >= kMaxPositionDelta)
			break;
		out.push_back({uint32_t(code), uint64_t(position)});
	}
	return out;
}

namespace {

// The source position in force at code_offset: the last entry at or before it.
std::optional<uint64_t> position_at(const std::vector<V8Position> &positions, uint32_t code_offset)
{
	auto after = std::upper_bound(positions.begin(), positions.end(), code_offset,
				      [](uint32_t offset, const V8Position &p) { return offset < p.code_offset; });
	if (after == positions.begin())
		return std::nullopt;
	return std::prev(after)->position;
}

} // namespace

std::optional<uint32_t> v8_script_offset(const std::vector<V8Position> &positions, uint32_t code_offset)
{
	const auto found = position_at(positions, code_offset);
	if (!found)
		return std::nullopt;
	const uint64_t position = *found;
	const uint32_t script = uint32_t(position >> 1) & ((1u << 30) - 1);
	if ((position & 1) || (position >> kInlinedShift) != 0 || script == 0)
		return std::nullopt;
	return script - 1;
}

std::vector<V8InlinedAt> v8_inlined_chain(const std::vector<V8Position> &positions,
					  const std::vector<uint64_t> &inlinings, uint32_t code_offset)
{
	const auto found = position_at(positions, code_offset);
	if (!found)
		return {};
	uint64_t position = *found;
	std::vector<V8InlinedAt> chain;
	while (chain.size() < kMaxV8Inlining) {
		const uint32_t script = uint32_t(position >> 1) & ((1u << 30) - 1);
		const int32_t inlining = int32_t((position >> kInlinedShift) & 0xffff) - 1;
		if (position & 1) // external: a Wasm function's, not a script's
			return {};
		chain.push_back({inlining, script ? std::optional(script - 1) : std::nullopt});
		if (inlining < 0)
			return chain;
		if (size_t(inlining) >= inlinings.size())
			return {};
		position = inlinings[size_t(inlining)];
	}
	return {};
}

uint32_t v8_line(const std::vector<uint32_t> &line_ends, uint32_t offset)
{
	if (line_ends.empty())
		return 0;
	return uint32_t(std::lower_bound(line_ends.begin(), line_ends.end(), offset) - line_ends.begin()) + 1;
}

std::optional<uint64_t> V8Memory::field(uint64_t tagged, uint32_t offset) const
{
	uint64_t value;
	if ((tagged & 3) != 1 || !read_process_memory(fd_, tagged - 1 + offset, &value, sizeof(value)))
		return std::nullopt;
	return value;
}

uint16_t V8Memory::type_of(uint64_t tagged) const
{
	const auto map = field(tagged, 0);
	return map ? map_type(*map) : 0;
}

uint16_t V8Memory::map_type(uint64_t map) const
{
	uint16_t type = 0;
	if ((map & 3) != 1 || !read_process_memory(fd_, map - 1 + layout_.walk.map_instance_type, &type, sizeof(type)))
		return 0;
	return type;
}

std::optional<std::string> V8Memory::string(uint64_t tagged, size_t max_bytes, int depth) const
{
	int pieces = kMaxStringPieces;
	return string_part(tagged, max_bytes, depth, pieces);
}

std::optional<std::string> V8Memory::string_part(uint64_t tagged, size_t max_bytes, int depth, int &pieces) const
{
	if (depth <= 0 || --pieces < 0)
		return std::nullopt;
	const uint16_t type = type_of(tagged);
	const auto length_word = field(tagged, layout_.string_length);
	if ( !type || type >= layout_.first_nonstring_type || !length_word)
		return std::nullopt;
	const uint32_t length = uint32_t(*length_word);
	if (length > max_bytes)
		return std::nullopt;
	const uint16_t representation = type & layout_.string_representation_mask;
	const bool one_byte = (type & layout_.string_encoding_mask) == layout_.one_byte_string_tag;
	// Where the characters are: in the object (sequential), or an external one's cached
	// address.
	std::optional<uint64_t> chars;
	if (representation == layout_.seq_string_tag)
		chars = tagged - 1 + (one_byte ? layout_.seq_one_byte_chars : layout_.seq_two_byte_chars);
	else if (layout_.external_data && representation == layout_.external_string_tag &&
		 !(type & kUncachedExternalStringMask))
		chars = field(tagged, layout_.external_data);
	if (chars) {
		// Not zeroed first: a length the object claims costs nothing until the read succeeds.
		const size_t raw_size = one_byte ? length : 2 * size_t(length);
		const auto raw = std::make_unique_for_overwrite<uint8_t[]>(raw_size);
		if (!read_process_memory(fd_, *chars, raw.get(), raw_size))
			return std::nullopt;
		std::string text;
		text.reserve(length);
		for (size_t i = 0; i < length; i++) {
			const uint32_t c = one_byte ? raw[i] : raw[2 * i] | uint32_t(raw[2 * i + 1]) << 8;
			if (c < 0x80) {
				text += char(c);
			} else if (c < 0x800) {
				text += char(0xc0 | c >> 6), text += char(0x80 | (c & 0x3f));
			} else {
				text += char(0xe0 | c >> 12), text += char(0x80 | (c >> 6 & 0x3f)), text += char(0x80 | (c & 0x3f));
			}
		}
		return text;
	}
	if (representation == layout_.cons_string_tag) {
		const auto first = field(tagged, layout_.cons_first), second = field(tagged, layout_.cons_second);
		if (!first || !second)
			return std::nullopt;
		auto head = string_part(*first, max_bytes, depth - 1, pieces);
		auto tail = head ? string_part(*second, max_bytes - std::min(max_bytes, head->size()), depth - 1, pieces)
				 : std::nullopt;
		if (!tail)
			return std::nullopt;
		return *head + *tail;
	}
	if (representation == layout_.thin_string_tag) {
		const auto actual = field(tagged, layout_.thin_actual);
		return actual ? string_part(*actual, max_bytes, depth - 1, pieces) : std::nullopt;
	}
	if (representation == layout_.sliced_string_tag) {
		// The slice's parent is read whole, so it too is bounded: at most max_bytes plus the
		// slice's own bounded length before it.
		const auto parent = field(tagged, layout_.sliced_parent), offset = field(tagged, layout_.sliced_offset);
		if (!parent || !offset || !is_small_integer(*offset) || small_integer(*offset) > max_bytes)
			return std::nullopt;
		const auto whole = string_part(*parent, max_bytes + small_integer(*offset), depth - 1, pieces);
		if (!whole || whole->size() < small_integer(*offset))
			return std::nullopt;
		return whole->substr(small_integer(*offset), length);
	}
	return std::nullopt; // an uncached external string: its address is its resource's own
}

std::optional<std::vector<uint32_t>> V8Memory::small_integers(uint64_t tagged, size_t max_items) const
{
	const auto length = field(tagged, layout_.array_length);
	if (type_of(tagged) != layout_.type_fixed_array || !length || !is_small_integer(*length) ||
	    small_integer(*length) > max_items)
		return std::nullopt;
	const size_t count = small_integer(*length);
	const auto words = std::make_unique_for_overwrite<uint64_t[]>(count);
	if (!read_process_memory(fd_, tagged - 1 + layout_.fixed_array_data, words.get(), count * 8))
		return std::nullopt;
	std::vector<uint32_t> values(count);
	for (size_t i = 0; i < count; i++)
		values[i] = small_integer(words[i]);
	return values;
}

std::optional<std::vector<uint8_t>> V8Memory::bytes(uint64_t tagged, size_t max_items) const
{
	const uint16_t type = type_of(tagged);
	const auto length = field(tagged, layout_.array_length);
	if (!type || (type != layout_.type_byte_array && type != layout_.type_trusted_byte_array) || !length ||
	    !is_small_integer(*length) || small_integer(*length) > max_items)
		return std::nullopt;
	std::vector<uint8_t> data(small_integer(*length));
	if (!read_process_memory(fd_, tagged - 1 + layout_.fixed_array_data, data.data(), data.size()))
		return std::nullopt;
	return data;
}

bool V8Memory::read(uint64_t address, void *out, size_t size) const
{
	return read_process_memory(fd_, address, out, size);
}

std::optional<uint64_t> V8Memory::element(uint64_t tagged, uint32_t index) const
{
	const auto length = field(tagged, layout_.array_length);
	if (!length || !is_small_integer(*length) || index >= small_integer(*length))
		return std::nullopt;
	auto value = field(tagged, uint32_t(layout_.fixed_array_data + 8 * uint64_t(index)));
	if (value && (*value & 3) == 3) // weak
		*value &= ~uint64_t(2);
	return value;
}

uint32_t V8Names::line_of(const Function &function, std::optional<uint32_t> script_offset)
{
	return function.script && script_offset ? v8_line(function.script->line_ends, *script_offset)
						 : function.start_line;
}

std::optional<V8Names::SharedWords> V8Names::shared_words(const V8Memory &memory, const V8Layout &layout,
							    uint64_t shared)
{
	const v8_process &walk = layout.walk;
	const auto map = memory.field(shared, 0);
	const auto name_word = memory.field(shared, walk.shared_name);
	const auto script_word = memory.field(shared, walk.shared_script);
	if (!map || memory.map_type(*map) != walk.type_shared || !name_word || !script_word)
		return std::nullopt;
	// As the walk reads it: whatever lies there, when the word is a heap object.
	const uint64_t script_id = (*script_word & 3) == 1 ? memory.field(*script_word, walk.script_id).value_or(0) : 0;
	return SharedWords{*map, *name_word, *script_word, script_id};
}

V8Names::Function V8Names::read_function(const V8Memory &memory, const V8Layout &layout, uint32_t pid,
					  const SharedWords &words)
{
	Function function;
	uint32_t start = UINT32_MAX;
	const uint16_t name_type = memory.type_of(words.name);
	if (name_type && name_type < layout.first_nonstring_type) {
		function.name = memory.string(words.name).value_or("");
	} else if (name_type == layout.type_scope_info) {
		// A ScopeInfo: its slots hold the function's name after its context locals, and its
		// start and end positions (fixed slots from V8 12.8.44; before, the first pair of
		// small integers after the name).
		uint64_t slots[16];
		if (memory.read(words.name - 1 + layout.scope_info_data, slots, sizeof(slots))) {
			if (layout.scope_positions_fixed && is_small_integer(slots[3]))
				start = small_integer(slots[3]);
			size_t at = layout.scope_first_vars;
			if (layout.scope_context_locals < 16 && is_small_integer(slots[layout.scope_context_locals]))
				at += 2 * size_t(small_integer(slots[layout.scope_context_locals]));
			for (uint64_t previous = 1; at < 16; previous = slots[at++]) {
				if (function.name.empty() && !is_small_integer(slots[at]))
					if (const auto text = memory.string(slots[at]))
						function.name = *text;
				if (!layout.scope_positions_fixed && is_small_integer(slots[at]) && is_small_integer(previous) &&
				    small_integer(previous) < small_integer(slots[at])) {
					start = small_integer(previous);
					break;
				}
				if (layout.scope_positions_fixed && !function.name.empty())
					break;
			}
		}
	}
	if (function.name.empty())
		function.name = "(anonymous)";

	if (memory.type_of(words.script) == layout.type_script) {
		const auto file = memory.field(words.script, layout.script_name);
		auto &script = scripts_[{pid, words.script, words.script_id, file.value_or(0),
					 memory.field(words.script, layout.script_source).value_or(0)}];
		if (!script) {
			auto made = std::make_shared<Script>();
			if (file)
				made->file = memory.string(*file, 4096).value_or("");
			const auto ends = memory.field(words.script, layout.script_line_ends);
			if (auto lines = ends ? memory.small_integers(*ends, kMaxLines) : std::nullopt) {
				made->line_ends = std::move(*lines);
			} else if (const auto source = memory.field(words.script, layout.script_source)) {
				// A source not read gives no lines (every offset past an empty one's end
				// read as line 2).
				if (const auto text = memory.string(*source, kMaxSource)) {
					for (size_t i = 0; i < text->size(); i++)
						if ((*text)[i] == '\n')
							made->line_ends.push_back(uint32_t(i));
					made->line_ends.push_back(uint32_t(text->size()));
				}
			}
			script = std::move(made);
		}
		function.script = script;
	}
	if (function.script && start != UINT32_MAX)
		function.start_line = v8_line(function.script->line_ends, start);
	return function;
}

bool V8Names::learn(const runtime_code &seen, const V8Layout &layout, int mem_fd, V8RootMaps *maps)
{
	const V8Memory memory(mem_fd, layout);
	const v8_process &walk = layout.walk;
	const uint64_t shared = seen.extra; // the function's SharedFunctionInfo, tagged
	const auto words = shared_words(memory, layout, shared);
	if (!words)
		return false;
	// The code object is still of the type the walk met there: not moved, with another
	// object (another function's, or none) in its place, whose table would give wrong lines.
	const uint64_t object_map = seen.kind == V8_CODE_FUNCTION ? 0 : memory.field(seen.object, 0).value_or(0);
	if ((seen.kind == V8_CODE_BYTECODE && memory.map_type(object_map) != walk.type_bytecode) ||
	    (seen.kind == V8_CODE_MACHINE && memory.map_type(object_map) != walk.type_code))
		return false;
	// Machine code's size and kind, and the addresses of its tables, as the walk read them
	// (a word not in this V8's layout stays 0).
	v8_code_words code_words{};
	bool baseline = false;
	if (seen.kind == V8_CODE_MACHINE) {
		const auto size = memory.field(seen.object, walk.code_size), flags = memory.field(seen.object, walk.code_flags);
		if (!size || !flags)
			return false;
		const uint32_t kind = (uint32_t(*flags) & walk.code_kind_mask) >> walk.code_kind_shift;
		code_words.size_kind = uint64_t(uint32_t(*size)) << 8 | kind;
		baseline = kind == walk.code_kind_baseline;
		for (auto [offset, word] : {std::pair{walk.code_positions, &code_words.positions},
					    std::pair{walk.code_deopt_data, &code_words.deopt_data}}) {
			const auto value = offset ? memory.field(seen.object, offset) : std::optional<uint64_t>(0);
			if (!value)
				return false;
			*word = *value;
		}
	}
	if (v8_fingerprint(shared, words->name, words->script, words->script_id, &code_words) != seen.fingerprint)
		return false;

	Code code;
	code.function = read_function(memory, layout, seen.pid, *words);

	// The position table: a bytecode array's, or optimized code's (baseline code maps to
	// bytecode offsets); the one the walk's fingerprint has, for machine code.
	std::optional<uint64_t> table;
	if (seen.kind == V8_CODE_BYTECODE && layout.bytecode_positions)
		table = memory.field(seen.object, layout.bytecode_positions);
	else if (seen.kind == V8_CODE_MACHINE && !baseline && walk.code_positions)
		table = code_words.positions;
	if (table)
		if (const auto bytes = memory.bytes(*table, kMaxTable))
			code.positions = v8_positions(*bytes);
	// Optimized code: the functions inlined into it, read now, while the process lives.
	if (seen.kind == V8_CODE_MACHINE && !baseline && walk.code_positions && walk.code_deopt_data &&
	    layout.deopt_inlining_positions && layout.deopt_literals) {
		const uint64_t deopt = code_words.deopt_data;
		const auto positions = memory.element(deopt, layout.deopt_inlining_positions);
		const auto literals = memory.element(deopt, layout.deopt_literals);
		const auto bytes = positions ? memory.bytes(*positions, kMaxInlinings * kInliningSize) : std::nullopt;
		std::unordered_map<int32_t, std::optional<Function>> by_literal; // a function inlined at several calls
		for (size_t at = 0; bytes && literals && at + kInliningSize <= bytes->size(); at += kInliningSize) {
			// InliningPosition: the call's SourcePosition, the inlined function's index
			// into the literals.
			uint64_t position;
			int32_t literal;
			std::memcpy(&position, bytes->data() + at, sizeof(position));
			std::memcpy(&literal, bytes->data() + at + 8, sizeof(literal));
			code.inlining_positions.push_back(position);
			if (const auto known = by_literal.find(literal); known != by_literal.end()) {
				code.inlined.push_back(known->second);
				continue;
			}
			std::optional<Function> function;
			uint64_t shared = 0;
			if (const auto element = literal >= 0 ? memory.element(*literals, uint32_t(literal)) : std::nullopt)
				shared = *element;
			if (shared && layout.type_shared_wrapper && memory.type_of(shared) == layout.type_shared_wrapper)
				shared = memory.field(shared, layout.wrapper_shared).value_or(0);
			if (const auto words = shared ? shared_words(memory, layout, shared) : std::nullopt)
				function = read_function(memory, layout, seen.pid, *words);
			by_literal.emplace(literal, function);
			code.inlined.push_back(std::move(function));
		}
	}
	// The maps of the objects met, read as their types above: the walk takes them as known
	// from now on.
	if (maps) {
		maps->shared = words->map;
		if (seen.kind == V8_CODE_BYTECODE)
			maps->bytecode = object_map;
		else if (seen.kind == V8_CODE_MACHINE)
			maps->code = object_map;
	}
	code.kept = {{seen.pid, seen.kind, seen.object}, window_};
	codes_[uint64_t(seen.pid) << 36 | (seen.id & V8_ID_MASK)] = std::move(code);
	return true;
}

void V8Names::end_window(const ForgetCode &forget)
{
	forget_unnamed_codes(codes_, ++window_, forget);
	// The scripts no function kept holds any more.
	std::erase_if(scripts_, [](const auto &entry) { return entry.second.use_count() == 1; });
}

bool V8Names::name(uint32_t pid, uint64_t id, uint32_t offset, RuntimeFrameName &out) const
{
	const auto it = codes_.find(uint64_t(pid) << 36 | id);
	if (it == codes_.end())
		return false;
	const Code &code = it->second;
	code.kept.window = window_;
	const Function &own = code.function;
	out.function = own.name;
	out.file = own.script ? own.script->file : "";
	out.line = own.start_line;
	if (!own.script || offset == V8_NO_OFFSET)
		return true;
	// Innermost first: each inlined into the next, the last the code's own function. One
	// whose function could not be read leaves the chain out (the start line stands).
	const std::vector<V8InlinedAt> chain = v8_inlined_chain(code.positions, code.inlining_positions, offset);
	for (const V8InlinedAt &at : chain)
		if (at.inlining >= 0 && !code.inlined[size_t(at.inlining)])
			return true;
	for (const V8InlinedAt &at : chain) {
		if (at.inlining < 0) {
			out.line = line_of(own, at.script_offset);
			break;
		}
		const Function &inlined = *code.inlined[size_t(at.inlining)];
		RuntimeFrameName frame{inlined.name, inlined.script ? inlined.script->file : "", line_of(inlined, at.script_offset)};
		out.inlined_here.push_back(std::move(frame));
	}
	return true;
}
