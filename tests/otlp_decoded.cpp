// tests/otlp_decoded.cpp: the OTLP profiles request, read and checked with the tests' schema.
#include "tests/otlp_decoded.h"

#include <doctest/doctest.h>

#include <set>

#include "tests/proto_wire.h"

namespace {

// opentelemetry-proto v1.10.0 and v1.11.0, the messages profile sends:
// collector/profiles/v1development/profiles_service.proto ExportProfilesServiceRequest
// { resource_profiles = 1; dictionary = 2 }; profiles/v1development/profiles.proto:
// ProfilesDictionary { mapping_table = 1; location_table = 2; function_table = 3;
// link_table = 4; string_table = 5; attribute_table = 6; stack_table = 7 },
// ResourceProfiles { resource = 1; scope_profiles = 2 }, ScopeProfiles { scope = 1;
// profiles = 2 }, Profile { sample_type = 1; samples = 2; time_unix_nano = 3 (fixed64);
// duration_nano = 4; period_type = 5; period = 6 }, ValueType { type_strindex = 1;
// unit_strindex = 2 }, Sample { stack_index = 1; attribute_indices = 2; link_index = 3;
// values = 4; timestamps_unix_nano = 5 }, Stack { location_indices = 1 }, Location {
// mapping_index = 1; address = 2; lines = 3; attribute_indices = 4 }, Line {
// function_index = 1; line = 2; column = 3 }, Function { name_strindex = 1;
// system_name_strindex = 2; filename_strindex = 3; start_line = 4 }, Mapping {
// memory_start = 1; memory_limit = 2; file_offset = 3; filename_strindex = 4;
// attribute_indices = 5 }, KeyValueAndUnit { key_strindex = 1; value = 2; unit_strindex = 3 };
// common/v1/common.proto: AnyValue { string_value = 1; bool_value = 2; int_value = 3; ... },
// KeyValue { key = 1; value = 2 }, InstrumentationScope { name = 1; version = 2 };
// resource/v1/resource.proto: Resource { attributes = 1 }.

// field -> wire type each message may hold; anything else fails.
void expect_wire(const char *message, const Field &f, std::initializer_list<std::pair<uint32_t, uint32_t>> allowed)
{
	for (auto [number, wire] : allowed)
		if (f.number == number) {
			// A repeated scalar may come packed (2) or not.
			CHECK_MESSAGE((f.wire == wire || (wire == 0 && f.wire == 2)),
				      message << " field " << f.number << " has wire type " << f.wire);
			return;
		}
	FAIL(message << " has no field " << f.number);
}

// An AnyValue as text: a string, or an int in decimal.
std::pair<std::string, bool> any_value(const std::string &bytes)
{
	std::pair<std::string, bool> value{"", false};
	for (const Field &f : fields(bytes)) {
		expect_wire("AnyValue", f, {{1, 2}, {3, 0}});
		if (f.number == 1)
			value = {f.bytes, false};
		else
			value = {std::to_string(int64_t(f.value)), true};
	}
	return value;
}

std::pair<uint64_t, uint64_t> value_type(const std::string &bytes)
{
	std::pair<uint64_t, uint64_t> type;
	for (const Field &f : fields(bytes)) {
		expect_wire("ValueType", f, {{1, 0}, {2, 0}});
		(f.number == 1 ? type.first : type.second) = f.value;
	}
	return type;
}

OtlpRequest::Profile profile(const std::string &bytes)
{
	OtlpRequest::Profile p;
	for (const Field &f : fields(bytes)) {
		expect_wire("Profile", f, {{1, 2}, {2, 2}, {3, 1}, {4, 0}, {5, 2}, {6, 0}});
		switch (f.number) {
		case 1: p.sample_type = value_type(f.bytes); break;
		case 2: {
			OtlpRequest::Sample s;
			for (const Field &g : fields(f.bytes)) {
				expect_wire("Sample", g, {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 1}});
				if (g.number == 1)
					s.stack = g.value;
				else if (g.number == 2)
					add_repeated(s.attributes, g);
				else if (g.number == 3)
					s.link = g.value;
				else if (g.number == 4)
					add_repeated(s.values, g);
				else
					s.timestamps += g.wire == 1 ? 1 : g.bytes.size() / 8;
			}
			p.samples.push_back(s);
			break;
		}
		case 3: p.time = f.value; break;
		case 4: p.duration = f.value; break;
		case 5: p.period_type = value_type(f.bytes); break;
		case 6: p.period = int64_t(f.value); break;
		}
	}
	return p;
}

OtlpRequest::Resource resource(const std::string &bytes)
{
	OtlpRequest::Resource r;
	for (const Field &f : fields(bytes)) {
		expect_wire("ResourceProfiles", f, {{1, 2}, {2, 2}, {3, 2}});
		if (f.number == 1) {
			for (const Field &g : fields(f.bytes)) {
				expect_wire("Resource", g, {{1, 2}, {2, 0}});
				std::string key, value;
				for (const Field &h : fields(g.bytes)) {
					expect_wire("KeyValue", h, {{1, 2}, {2, 2}});
					if (h.number == 1)
						key = h.bytes;
					else
						value = any_value(h.bytes).first;
				}
				CHECK_MESSAGE(r.attributes.emplace(key, value).second, "resource attribute " << key << " twice");
			}
		} else if (f.number == 2) {
			for (const Field &g : fields(f.bytes)) {
				expect_wire("ScopeProfiles", g, {{1, 2}, {2, 2}, {3, 2}});
				if (g.number == 1)
					for (const Field &h : fields(g.bytes)) {
						expect_wire("InstrumentationScope", h, {{1, 2}, {2, 2}, {3, 2}, {4, 0}});
						(h.number == 1 ? r.scope_name : r.scope_version) = h.bytes;
					}
				else if (g.number == 2)
					r.profiles.push_back(profile(g.bytes));
			}
		}
	}
	return r;
}

// Every element of a table once, and the first the zero value: an empty message, or a
// message of zero bytes alone (the spec's preferred zero Link: ids of 16 and 8 zero bytes).
void check_table(const std::string &name, const std::vector<std::string> &elements)
{
	REQUIRE_MESSAGE(!elements.empty(), name << " has no element 0");
	bool zero = true;
	for (const Field &f : fields(elements[0]))
		zero &= f.value == 0 && f.bytes.find_first_not_of('\0') == std::string::npos;
	CHECK_MESSAGE(zero, name << "[0] is not the zero value");
	std::set<std::string> seen;
	for (const std::string &element : elements)
		CHECK_MESSAGE(seen.insert(element).second, name << " holds an element twice");
}

void check_indices(const char *what, const std::vector<uint64_t> &indices, size_t size)
{
	for (uint64_t i : indices)
		CHECK_MESSAGE(i < size, what << " index " << i << " past its table (" << size << ")");
}

} // namespace

OtlpRequest decode_otlp(const std::string &bytes)
{
	OtlpRequest r;
	std::vector<std::string> tables[8];
	size_t dictionaries = 0;
	for (const Field &f : fields(bytes)) {
		expect_wire("ExportProfilesServiceRequest", f, {{1, 2}, {2, 2}});
		if (f.number == 1) {
			r.resources.push_back(resource(f.bytes));
			continue;
		}
		dictionaries++;
		for (const Field &g : fields(f.bytes)) {
			expect_wire("ProfilesDictionary", g, {{1, 2}, {2, 2}, {3, 2}, {4, 2}, {5, 2}, {6, 2}, {7, 2}});
			tables[g.number].push_back(g.bytes);
		}
	}
	REQUIRE(dictionaries == 1);
	const char *names[] = {"", "mapping_table", "location_table", "function_table", "link_table",
			       "string_table", "attribute_table", "stack_table"};
	for (int t = 1; t <= 7; t++)
		check_table(names[t], tables[t]);
	r.strings = tables[5];
	r.links = tables[4].size();
	for (const std::string &m : tables[1]) {
		OtlpRequest::Mapping mapping;
		for (const Field &f : fields(m)) {
			expect_wire("Mapping", f, {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}});
			uint64_t *targets[] = {nullptr, &mapping.start, &mapping.limit, &mapping.offset, &mapping.filename};
			if (f.number <= 4)
				*targets[f.number] = f.value;
			else
				add_repeated(mapping.attributes, f);
		}
		r.mappings.push_back(mapping);
	}
	for (const std::string &l : tables[2]) {
		OtlpRequest::Location location;
		for (const Field &f : fields(l)) {
			expect_wire("Location", f, {{1, 0}, {2, 0}, {3, 2}, {4, 0}});
			if (f.number == 1)
				location.mapping = f.value;
			else if (f.number == 2)
				location.address = f.value;
			else if (f.number == 4)
				add_repeated(location.attributes, f);
			else {
				OtlpRequest::Line line;
				for (const Field &g : fields(f.bytes)) {
					expect_wire("Line", g, {{1, 0}, {2, 0}, {3, 0}});
					if (g.number == 1)
						line.function = g.value;
					else if (g.number == 2)
						line.line = int64_t(g.value);
				}
				location.lines.push_back(line);
			}
		}
		r.locations.push_back(location);
	}
	for (const std::string &fn : tables[3]) {
		OtlpRequest::Function function;
		for (const Field &f : fields(fn)) {
			expect_wire("Function", f, {{1, 0}, {2, 0}, {3, 0}, {4, 0}});
			uint64_t *targets[] = {nullptr, &function.name, &function.system_name, &function.filename};
			if (f.number <= 3)
				*targets[f.number] = f.value;
		}
		r.functions.push_back(function);
	}
	for (const std::string &a : tables[6]) {
		OtlpRequest::Attribute attribute;
		for (const Field &f : fields(a)) {
			expect_wire("KeyValueAndUnit", f, {{1, 0}, {2, 2}, {3, 0}});
			if (f.number == 1)
				attribute.key = f.value;
			else if (f.number == 2)
				std::tie(attribute.text, attribute.is_int) = any_value(f.bytes);
		}
		r.attributes.push_back(attribute);
	}
	for (const std::string &s : tables[7]) {
		std::vector<uint64_t> locations;
		for (const Field &f : fields(s)) {
			expect_wire("Stack", f, {{1, 0}});
			add_repeated(locations, f);
		}
		r.stacks.push_back(locations);
	}

	// Every index in range, and attribute keys unique where the spec asks.
	const size_t strings = r.strings.size();
	for (const OtlpRequest::Mapping &m : r.mappings) {
		check_indices("mapping filename_strindex", {m.filename}, strings);
		check_indices("mapping attribute", m.attributes, r.attributes.size());
	}
	for (const OtlpRequest::Location &l : r.locations) {
		check_indices("location mapping", {l.mapping}, r.mappings.size());
		check_indices("location attribute", l.attributes, r.attributes.size());
		for (const OtlpRequest::Line &line : l.lines)
			check_indices("line function", {line.function}, r.functions.size());
	}
	for (const OtlpRequest::Function &fn : r.functions)
		check_indices("function strindex", {fn.name, fn.system_name, fn.filename}, strings);
	for (const OtlpRequest::Attribute &a : r.attributes)
		check_indices("attribute key_strindex", {a.key}, strings);
	for (const std::vector<uint64_t> &stack : r.stacks)
		check_indices("stack location", stack, r.locations.size());
	for (const OtlpRequest::Resource &resource : r.resources)
		for (const OtlpRequest::Profile &p : resource.profiles) {
			check_indices("value type strindex",
				      {p.sample_type.first, p.sample_type.second, p.period_type.first, p.period_type.second},
				      strings);
			for (const OtlpRequest::Sample &s : p.samples) {
				check_indices("sample stack", {s.stack}, r.stacks.size());
				check_indices("sample link", {s.link}, r.links);
				check_indices("sample attribute", s.attributes, r.attributes.size());
				CHECK(s.values.size() == 1);
				r.attributes_of(s.attributes);
			}
		}
	for (const OtlpRequest::Location &l : r.locations)
		r.attributes_of(l.attributes);
	return r;
}

const std::string &OtlpRequest::str(uint64_t index) const
{
	REQUIRE(index < strings.size());
	return strings[index];
}

std::map<std::string, std::string> OtlpRequest::attributes_of(const std::vector<uint64_t> &indices) const
{
	std::map<std::string, std::string> out;
	for (uint64_t i : indices) {
		REQUIRE(i < attributes.size());
		CHECK_MESSAGE(i != 0, "an attribute index of 0, the zero value");
		const std::string &key = str(attributes[i].key);
		CHECK_MESSAGE(out.emplace(key, attributes[i].text).second, "attribute " << key << " twice in one list");
	}
	return out;
}

std::vector<std::string> OtlpRequest::frames(const Sample &sample) const
{
	std::vector<std::string> names;
	REQUIRE(sample.stack < stacks.size());
	for (uint64_t l : stacks[sample.stack]) {
		REQUIRE(l < locations.size());
		for (const Line &line : locations[l].lines) {
			REQUIRE(line.function < functions.size());
			names.push_back(str(functions[line.function].name));
		}
	}
	return names;
}

std::map<std::string, uint64_t> OtlpRequest::folded() const
{
	std::map<std::string, uint64_t> stacks_by_line;
	for (const Resource &resource : resources)
		for (const Profile &profile : resource.profiles)
			for (const Sample &sample : profile.samples) {
				std::map<std::string, std::string> a = attributes_of(sample.attributes);
				const std::string pid = a.count("process.pid") ? a["process.pid"]
										: resource.attributes.at("process.pid");
				std::string line = a["thread.name"] + "-" + pid;
				if (auto it = resource.attributes.find("container.id"); it != resource.attributes.end())
					line += "@" + it->second.substr(0, 12);
				const std::vector<std::string> names = frames(sample);
				for (auto it = names.rbegin(); it != names.rend(); ++it)
					line += ";" + *it;
				stacks_by_line[line] += sample.values.at(0);
			}
	return stacks_by_line;
}

uint64_t OtlpRequest::total() const
{
	uint64_t n = 0;
	for (const Resource &resource : resources)
		for (const Profile &profile : resource.profiles)
			for (const Sample &sample : profile.samples)
				n += sample.values.at(0);
	return n;
}
