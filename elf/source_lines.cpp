// elf/source_lines.cpp: file:line and inlined frames for an address, through libdw.
#include "elf/source_lines.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <map>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unordered_map>

#include "base/fd.h"
#include "elf/demangle.h"
#include "elf/dwarf_file.h"
#include "elf/elf_handles.h"

namespace {

// Ranges of code, each naming the DIE that covers it. Found: the range with the latest
// start that holds the address, so that of overlapping ranges (odd or broken DWARF) the
// innermost wins.
class RangeIndex {
public:
	void add(uint64_t low, uint64_t high, const Dwarf_Die &die)
	{
		if (low < high)
			ranges_.push_back({low, high, die});
	}

	void finish()
	{
		std::sort(ranges_.begin(), ranges_.end(), [](const Range &a, const Range &b) {
			return a.low != b.low ? a.low < b.low : a.high > b.high;
		});
		reach_.resize(ranges_.size());
		uint64_t reach = 0;
		for (size_t i = 0; i < ranges_.size(); i++)
			reach_[i] = reach = std::max(reach, ranges_[i].high);
	}

	const Dwarf_Die *find(uint64_t address) const
	{
		auto after = std::upper_bound(ranges_.begin(), ranges_.end(), address,
					      [](uint64_t value, const Range &range) { return value < range.low; });
		size_t i = after - ranges_.begin();
		// reach_ ends the walk back; the cap bounds it when one huge bogus range
		// covers everything after it.
		for (int steps = 0; i > 0 && reach_[i - 1] > address && steps < kMaxSteps; i--, steps++)
			if (address < ranges_[i - 1].high)
				return &ranges_[i - 1].die;
		return nullptr;
	}

	bool empty() const { return ranges_.empty(); }

private:
	static constexpr int kMaxSteps = 64;
	struct Range {
		uint64_t low, high;
		Dwarf_Die die;
	};
	std::vector<Range> ranges_;
	std::vector<uint64_t> reach_; // the highest end of ranges_[0..i]
};

void add_ranges(RangeIndex &index, Dwarf_Die *die)
{
	Dwarf_Addr base, low, high;
	for (ptrdiff_t offset = 0; (offset = dwarf_ranges(die, offset, &base, &low, &high)) > 0;)
		index.add(low, high, *die);
}

const char *string_attribute(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attribute;
	return dwarf_formstring(dwarf_attr_integrate(die, name, &attribute));
}

// Deep enough for any real nesting of scopes or inlined calls; a bound on hostile nesting.
constexpr int kMaxScopeDepth = 256;

const std::string kNoText;

// What one compile unit says about its functions and files, read in one walk of its DIEs
// the first time an address falls in it.
struct UnitIndex {
	RangeIndex functions; // every DW_TAG_subprogram with code, in any scope
	// Functions declared inside a namespace or class, by DIE offset, to the qualifying
	// prefix ("fixture::Spinner::"): what names the ones without a linkage name.
	std::unordered_map<Dwarf_Off, uint32_t> prefix_of;
	std::vector<std::string> prefixes;
	std::string compile_dir;
	Dwarf_Files *files = nullptr;        // the line table's, which DW_AT_call_file indexes
	std::vector<std::string> file_paths; // per index, joined with compile_dir

	static constexpr uint32_t kNoPrefix = UINT32_MAX;
	static constexpr size_t kMaxPrefix = 4096;

	void read(Dwarf_Die *unit)
	{
		if (const char *dir = string_attribute(unit, DW_AT_comp_dir))
			compile_dir = dir;
		size_t count = 0;
		if (dwarf_getsrcfiles(unit, &files, &count) == 0) {
			file_paths.reserve(count);
			for (size_t i = 0; i < count; i++)
				file_paths.push_back(path(dwarf_filesrc(files, i, nullptr, nullptr)));
		} else {
			files = nullptr;
		}
		read_children(unit, kNoPrefix, 0);
		functions.finish();
	}

	void read_children(Dwarf_Die *parent, uint32_t prefix, int depth)
	{
		Dwarf_Die child;
		if (depth > kMaxScopeDepth || dwarf_child(parent, &child) != 0)
			return;
		do {
			uint32_t inner = prefix;
			bool may_hold_functions = false;
			switch (dwarf_tag(&child)) {
			case DW_TAG_subprogram:
				if (prefix != kNoPrefix)
					prefix_of.emplace(dwarf_dieoffset(&child), prefix);
				add_ranges(functions, &child);
				may_hold_functions = true; // GCC puts local classes' methods inside
				break;
			case DW_TAG_namespace:
			case DW_TAG_class_type:
			case DW_TAG_structure_type:
			case DW_TAG_union_type: {
				const char *name = dwarf_diename(&child);
				if (!name)
					name = dwarf_tag(&child) == DW_TAG_namespace ? "(anonymous namespace)"
										     : "(anonymous)";
				std::string scope =
					(prefix == kNoPrefix ? std::string() : prefixes[prefix]) + name + "::";
				// Bounded, or nested scopes with long names would make every
				// prefix longer than the last.
				if (scope.size() <= kMaxPrefix) {
					inner = uint32_t(prefixes.size());
					prefixes.push_back(std::move(scope));
				}
				may_hold_functions = true;
				break;
			}
			case DW_TAG_lexical_block:
			case DW_TAG_try_block:
			case DW_TAG_catch_block:
				may_hold_functions = true;
				break;
			}
			// The rest (inlined calls, variables, members of types) is most of the
			// DWARF, skipped over whole.
			if (may_hold_functions && dwarf_haschildren(&child) > 0)
				read_children(&child, inner, depth + 1);
			Dwarf_Die sibling;
			if (dwarf_siblingof(&child, &sibling) != 0)
				break;
			child = sibling;
		} while (true);
	}

	// Joined with the compile folder, as addr2line shows it, when relative; without the
	// "/./" a quoted include ("./sampler/sampler.h") leaves.
	std::string path(const char *file) const
	{
		if (!file)
			return {};
		std::string joined = file;
		if (file[0] != '/' && !compile_dir.empty())
			joined = compile_dir + (compile_dir.back() == '/' ? "" : "/") + file;
		for (size_t at; (at = joined.find("/./")) != std::string::npos;)
			joined.erase(at, 2);
		return joined;
	}

	const std::string &file_path(Dwarf_Word index) const
	{
		return index < file_paths.size() ? file_paths[index] : kNoText;
	}
};

// One function and the calls inlined into it, read in one walk of its DIEs the first time
// an address falls in it. Which call is innermost at each address is kept as a step
// function over the function's code, so a lookup is one binary search.
struct FunctionScopes {
	static constexpr uint32_t kNone = UINT32_MAX; // no call: the function's own code

	struct Call {
		Dwarf_Die die;
		uint32_t parent; // the call this one was inlined into, or kNone
		uint32_t depth;  // 1 for a call the function itself makes
		const std::string *call_file; // where, in the parent's code
		uint32_t call_line;
		const std::string *name = nullptr; // on first use
	};

	Dwarf_Die function;
	const std::string *name = nullptr; // on first use
	std::vector<Call> calls; // a parent before its children
	std::vector<uint64_t> starts;
	std::vector<uint32_t> innermost; // from starts[i] up to starts[i + 1]

	void read(const Dwarf_Die &die, const UnitIndex &unit)
	{
		function = die;
		std::vector<Span> spans;
		read_calls(&function, kNone, 0, 0, unit, spans);
		index(spans);
	}

	uint32_t innermost_call(uint64_t address) const
	{
		auto after = std::upper_bound(starts.begin(), starts.end(), address);
		return after == starts.begin() ? kNone : innermost[after - starts.begin() - 1];
	}

private:
	struct Span {
		uint64_t low, high;
		uint32_t call;
	};

	// depth counts the calls around, nesting every DIE (blocks too): the bound on the
	// recursion.
	void read_calls(Dwarf_Die *scope, uint32_t parent, uint32_t depth, int nesting, const UnitIndex &unit,
			std::vector<Span> &spans)
	{
		Dwarf_Die child;
		if (nesting > kMaxScopeDepth || dwarf_child(scope, &child) != 0)
			return;
		do {
			switch (dwarf_tag(&child)) {
			case DW_TAG_inlined_subroutine: {
				Dwarf_Attribute attribute;
				Dwarf_Word file = UINT64_MAX, line = 0;
				if (dwarf_formudata(dwarf_attr(&child, DW_AT_call_file, &attribute), &file) != 0)
					file = UINT64_MAX;
				if (dwarf_formudata(dwarf_attr(&child, DW_AT_call_line, &attribute), &line) != 0 ||
				    line > UINT32_MAX)
					line = 0;
				uint32_t call = uint32_t(calls.size());
				calls.push_back({child, parent, depth + 1, &unit.file_path(file), uint32_t(line)});
				Dwarf_Addr base, low, high;
				for (ptrdiff_t offset = 0;
				     (offset = dwarf_ranges(&child, offset, &base, &low, &high)) > 0;)
					if (low < high)
						spans.push_back({low, high, call});
				read_calls(&child, call, depth + 1, nesting + 1, unit, spans);
				break;
			}
			// Blocks are no frame of their own, but hold inlined calls.
			case DW_TAG_lexical_block:
			case DW_TAG_try_block:
			case DW_TAG_catch_block:
				read_calls(&child, parent, depth, nesting + 1, unit, spans);
				break;
			}
			Dwarf_Die sibling;
			if (dwarf_siblingof(&child, &sibling) != 0)
				break;
			child = sibling;
		} while (true);
	}

	// Spans painted outermost first, so at each address the deepest call that covers it
	// is left; overlapping spans (broken DWARF) just paint over each other.
	void index(std::vector<Span> &spans)
	{
		std::stable_sort(spans.begin(), spans.end(), [&](const Span &a, const Span &b) {
			return calls[a.call].depth < calls[b.call].depth;
		});
		std::map<uint64_t, uint32_t> steps;
		for (const Span &span : spans) {
			auto at_high = steps.upper_bound(span.high);
			uint32_t after = at_high == steps.begin() ? kNone : std::prev(at_high)->second;
			steps.erase(steps.lower_bound(span.low), at_high);
			steps[span.low] = span.call;
			steps[span.high] = after;
		}
		starts.reserve(steps.size());
		innermost.reserve(steps.size());
		for (const auto &[start, call] : steps) {
			starts.push_back(start);
			innermost.push_back(call);
		}
	}
};

} // namespace

// find fills the caches below: one SourceLines serves one thread at a time.
struct SourceLines::Impl {
	// Declared in the order they are needed, so ended in the reverse: the main DWARF
	// before the alt file it may point into.
	std::vector<char> empty_alt_image;
	DebugInfo alt;
	DebugInfo main;

	RangeIndex units; // compile units by their code ranges
	// Built on first use, by DIE offset. Nodes of unordered_map stay put, so the
	// pointers to names held in FunctionScopes stay good.
	std::unordered_map<Dwarf_Off, UnitIndex> unit_indexes;
	std::unordered_map<Dwarf_Off, FunctionScopes> functions;
	std::unordered_map<Dwarf_Off, std::string> names;

	bool find_alt_file(int fd);
	const Dwarf_Die *find_unit(uint64_t address, Dwarf_Die &storage);
	UnitIndex &unit_index(Dwarf_Die *unit);
	FunctionScopes &function_scopes(const Dwarf_Die &function, const UnitIndex &unit);
	const std::string &name(Dwarf_Die *function);
};

// dwz moves what several debug files share into one alt file, named by
// .gnu_debugaltlink. libdw would open that name itself, on first use, as the file's
// author wrote it: as root, any path, blocking for ever on a FIFO. So it is looked for
// here, only under /usr/lib/debug, only as a regular file with the build id the link
// names; when none is found libdw gets an empty stand-in and alt references just fail.
// False when neither could be set up, and libdw would go looking.
bool SourceLines::Impl::find_alt_file(int fd)
{
	const char *alt_name = nullptr;
	const void *build_id = nullptr;
	ssize_t id_size = dwelf_dwarf_gnu_debugaltlink(main.dwarf.get(), &alt_name, &build_id);
	if (id_size <= 0)
		return true; // no (usable) link: libdw does not look for an alt file either
	std::string_view wanted_id(static_cast<const char *>(build_id), size_t(id_size));

	std::vector<std::string> candidates;
	if (wanted_id.size() >= 2) {
		static const char digits[] = "0123456789abcdef";
		std::string path = "/usr/lib/debug/.build-id/";
		for (size_t i = 0; i < wanted_id.size(); i++) {
			uint8_t byte = uint8_t(wanted_id[i]);
			path += digits[byte >> 4];
			path += digits[byte & 15];
			if (i == 0)
				path += '/';
		}
		candidates.push_back(path + ".debug");
	}
	if (alt_name && *alt_name) {
		if (alt_name[0] == '/') {
			candidates.push_back(alt_name);
		} else {
			// Relative to the folder of the file that names it, as libdw reads it.
			std::string self = "/proc/self/fd/" + std::to_string(fd);
			if (char *real = realpath(self.c_str(), nullptr)) {
				std::string dir(real);
				std::free(real);
				candidates.push_back(dir.substr(0, dir.rfind('/') + 1) + alt_name);
			}
		}
	}

	for (const std::string &candidate : candidates) {
		char *real = realpath(candidate.c_str(), nullptr); // follows links, opens nothing
		if (!real)
			continue;
		std::string path(real);
		std::free(real);
		if (!path.starts_with("/usr/lib/debug/"))
			continue;
		UniqueFd alt_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW));
		if (!alt_fd)
			continue;
		DebugInfo found = read_debug_info(alt_fd.get());
		if (!found.dwarf)
			continue;
		const void *found_id = nullptr;
		ssize_t found_size = dwelf_elf_gnu_build_id(found.elf.get(), &found_id);
		if (found_size <= 0 ||
		    std::string_view(static_cast<const char *>(found_id), size_t(found_size)) != wanted_id)
			continue;
		alt = std::move(found);
		dwarf_setalt(main.dwarf.get(), alt.dwarf.get());
		return true;
	}

	empty_alt_image = empty_dwarf_image();
	alt.elf.reset(elf_memory(empty_alt_image.data(), empty_alt_image.size()));
	if (alt.elf)
		alt.dwarf.reset(dwarf_begin_elf(alt.elf.get(), DWARF_C_READ, nullptr));
	if (!alt.dwarf)
		return false;
	dwarf_setalt(main.dwarf.get(), alt.dwarf.get());
	return true;
}

const Dwarf_Die *SourceLines::Impl::find_unit(uint64_t address, Dwarf_Die &storage)
{
	if (const Dwarf_Die *unit = units.find(address))
		return unit;
	// A unit that states no ranges of its own may still be in .debug_aranges.
	if (dwarf_addrdie(main.dwarf.get(), address, &storage))
		return &storage;
	return nullptr;
}

UnitIndex &SourceLines::Impl::unit_index(Dwarf_Die *unit)
{
	auto [index, added] = unit_indexes.try_emplace(dwarf_dieoffset(unit));
	if (added)
		index->second.read(unit);
	return index->second;
}

FunctionScopes &SourceLines::Impl::function_scopes(const Dwarf_Die &function, const UnitIndex &unit)
{
	Dwarf_Die die = function;
	auto [scopes, added] = functions.try_emplace(dwarf_dieoffset(&die));
	if (added)
		scopes->second.read(function, unit);
	return scopes->second;
}

const std::string &SourceLines::Impl::name(Dwarf_Die *function)
{
	Dwarf_Off key = dwarf_dieoffset(function);
	auto known = names.find(key);
	if (known != names.end())
		return known->second;
	// An inlined call names the function it inlined by DW_AT_abstract_origin. One whose
	// origin is not a function (malformed DWARF: past its unit, itself, the unit) has no
	// name, rather than the name of whatever it points at.
	if (dwarf_tag(function) == DW_TAG_inlined_subroutine) {
		Dwarf_Attribute attribute;
		Dwarf_Die origin;
		if (!dwarf_formref_die(dwarf_attr(function, DW_AT_abstract_origin, &attribute), &origin) ||
		    dwarf_tag(&origin) != DW_TAG_subprogram)
			return names.emplace(key, std::string()).first->second;
	}
	// A C++ linkage name demangles to the qualified name with its parameters, as the
	// ELF symbols read; DW_AT_name alone is "spin" for fixture::Spinner::spin(long).
	const char *linkage = string_attribute(function, DW_AT_linkage_name);
	if (!linkage)
		linkage = string_attribute(function, DW_AT_MIPS_linkage_name);
	std::string text;
	if (linkage) {
		text = demangle(linkage);
	} else if (const char *plain = string_attribute(function, DW_AT_name)) {
		// GCC gives no linkage name to functions of internal linkage (static, anonymous
		// namespace), the ones most often inlined: the scopes around the declaration
		// qualify the plain name instead.
		Dwarf_Die declaration = *function;
		for (int step = 0; step < 8; step++) {
			Dwarf_Attribute attribute;
			Dwarf_Attribute *reference = dwarf_attr(&declaration, DW_AT_abstract_origin, &attribute);
			if (!reference)
				reference = dwarf_attr(&declaration, DW_AT_specification, &attribute);
			Dwarf_Die next;
			if (!reference || !dwarf_formref_die(reference, &next))
				break;
			declaration = next;
		}
		Dwarf_Die unit;
		if (dwarf_diecu(&declaration, &unit, nullptr, nullptr)) {
			UnitIndex &index = unit_index(&unit);
			auto prefix = index.prefix_of.find(dwarf_dieoffset(&declaration));
			if (prefix != index.prefix_of.end())
				text = index.prefixes[prefix->second];
		}
		text += plain;
	}
	return names.emplace(key, std::move(text)).first->second;
}

SourceLines::SourceLines() : impl_(std::make_unique<Impl>()) {}
SourceLines::~SourceLines() = default;

std::unique_ptr<SourceLines> SourceLines::open(int fd)
{
	std::unique_ptr<SourceLines> lines(new SourceLines());
	Impl &impl = *lines->impl_;
	impl.main = read_debug_info(fd);
	if (!impl.main.dwarf || !impl.find_alt_file(fd))
		return nullptr;

	Dwarf_CU *unit = nullptr, *next = nullptr;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die unit_die;
	// No split units are asked for (the last argument): that would open .dwo files by
	// the names the file gives.
	while (dwarf_get_units(impl.main.dwarf.get(), unit, &next, &version, &type, &unit_die, nullptr) == 0) {
		unit = next;
		if (type == DW_UT_compile || type == DW_UT_partial || type == DW_UT_skeleton)
			add_ranges(impl.units, &unit_die);
	}
	impl.units.finish();

	Dwarf_Aranges *aranges = nullptr;
	size_t arange_count = 0;
	if (impl.units.empty() &&
	    (dwarf_getaranges(impl.main.dwarf.get(), &aranges, &arange_count) != 0 || arange_count == 0))
		return nullptr;
	return lines;
}

size_t SourceLines::inflated_bytes() const
{
	return impl_->main.inflated_bytes;
}

std::vector<SourceLocation> SourceLines::find(uint64_t address)
{
	Dwarf_Die unit_storage;
	const Dwarf_Die *found_unit = impl_->find_unit(address, unit_storage);
	if (!found_unit)
		return {};
	Dwarf_Die unit = *found_unit;

	Dwarf_Line *row = dwarf_getsrc_die(&unit, address);
	int line = 0;
	if (!row || dwarf_lineno(row, &line) != 0)
		return {};
	const UnitIndex &index = impl_->unit_index(&unit);

	SourceLocation here;
	Dwarf_Files *files = nullptr;
	size_t file = 0;
	if (index.files && dwarf_line_file(row, &files, &file) == 0 && files == index.files)
		here.file = index.file_path(file);
	else
		here.file = index.path(dwarf_linesrc(row, nullptr, nullptr));
	here.line = line > 0 ? uint32_t(line) : 0;

	// Innermost first: each inlined call sits at the line of the address or, for the
	// ones further out, at the call site of the call inside it.
	std::vector<SourceLocation> locations;
	if (const Dwarf_Die *function = index.functions.find(address)) {
		FunctionScopes &scopes = impl_->function_scopes(*function, index);
		for (uint32_t i = scopes.innermost_call(address); i != FunctionScopes::kNone;) {
			FunctionScopes::Call &call = scopes.calls[i];
			if (!call.name)
				call.name = &impl_->name(&call.die);
			here.function = *call.name;
			here.inlined = true;
			locations.push_back(here);
			here.file = *call.call_file;
			here.line = call.call_line;
			// A parent is always read before its children: the walk ends.
			i = call.parent;
		}
		if (!scopes.name)
			scopes.name = &impl_->name(&scopes.function);
		here.function = *scopes.name;
	}
	// With no function DIE around the address, the line still stands, under no name.
	here.inlined = false;
	locations.push_back(std::move(here));
	return locations;
}
