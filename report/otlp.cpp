// report/otlp.cpp: the profile as an OTLP ExportProfilesServiceRequest, what an OpenTelemetry
// Collector, Pyroscope and other OTLP backends take at /v1development/profiles.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "report/locations.h"
#include "report/protobuf.h"
#include "report/report.h"
#include "report/utf8.h"

namespace {

// Field numbers of opentelemetry-proto v1.10.0 and v1.11.0, whose wire is the same (v1.9 and
// v1.10 each renumbered fields: an older or newer alpha may not read this). From
// opentelemetry/proto/collector/profiles/v1development/profiles_service.proto,
// profiles/v1development/profiles.proto, common/v1/common.proto and resource/v1/resource.proto.
namespace request_field { // ExportProfilesServiceRequest
constexpr uint32_t resource_profiles = 1, dictionary = 2;
}
namespace dictionary_field { // ProfilesDictionary
constexpr uint32_t mapping_table = 1, location_table = 2, function_table = 3, link_table = 4,
		   string_table = 5, attribute_table = 6, stack_table = 7;
}
namespace resource_profiles_field { // ResourceProfiles
constexpr uint32_t resource = 1, scope_profiles = 2;
}
namespace resource_field { // resource.v1.Resource
constexpr uint32_t attributes = 1;
}
namespace key_value_field { // common.v1.KeyValue
constexpr uint32_t key = 1, value = 2;
}
namespace any_value_field { // common.v1.AnyValue
constexpr uint32_t string_value = 1, int_value = 3;
}
namespace scope_profiles_field { // ScopeProfiles
constexpr uint32_t scope = 1, profiles = 2;
}
namespace scope_field { // common.v1.InstrumentationScope
constexpr uint32_t name = 1, version = 2;
}
namespace profile_field { // Profile
constexpr uint32_t sample_type = 1, samples = 2, time_unix_nano = 3, duration_nano = 4, period_type = 5,
		   period = 6;
}
namespace value_type_field { // ValueType
constexpr uint32_t type_strindex = 1, unit_strindex = 2;
}
namespace sample_field { // Sample
constexpr uint32_t stack_index = 1, attribute_indices = 2, values = 4;
}
namespace stack_field { // Stack
constexpr uint32_t location_indices = 1;
}
namespace location_field { // Location
constexpr uint32_t mapping_index = 1, address = 2, lines = 3, attribute_indices = 4;
}
namespace line_field { // Line
constexpr uint32_t function_index = 1, line = 2;
}
namespace function_field { // Function
constexpr uint32_t name_strindex = 1, system_name_strindex = 2, filename_strindex = 3;
}
namespace mapping_field { // Mapping
constexpr uint32_t memory_start = 1, memory_limit = 2, file_offset = 3, filename_strindex = 4,
		   attribute_indices = 5;
}
namespace link_field { // Link
constexpr uint32_t trace_id = 1, span_id = 2;
}
namespace attribute_field { // KeyValueAndUnit
constexpr uint32_t key_strindex = 1, value = 2;
}

// profile.frame.type, as OpenTelemetry's semantic conventions name each kind of frame
// (report/model.cpp's rows).
std::string_view frame_type(FrameKind kind)
{
	return frame_kind_rule(kind).frame_type;
}

// perf's name for the kernel image, as the pprof writer names it.
constexpr std::string_view kernel_mapping_name = "[kernel.kallsyms]";

// A dictionary table: each distinct element once, by its encoded bytes; element 0 the zero
// value, as the spec asks.
class Table {
public:
	explicit Table(std::string zero = {}) { index(std::move(zero)); }
	uint64_t index(std::string element)
	{
		auto [it, inserted] = indices_.try_emplace(std::move(element), elements_.size());
		if (inserted)
			elements_.push_back(&it->first);
		return it->second;
	}
	void write(ProtoMessage &out, uint32_t field) const
	{
		for (const std::string *element : elements_)
			out.add_bytes(field, *element);
	}
	size_t size() const { return elements_.size(); }

private:
	std::unordered_map<std::string, uint64_t> indices_;
	std::vector<const std::string *> elements_;
};

// The samples of one resource (a container's, or the one process's), each by its identity
// (its stack and attributes), and the process the resource names.
struct ResourceSamples {
	uint32_t pid = 0; // a run of one process: its id; 0 otherwise
	std::map<std::pair<uint64_t, std::vector<uint64_t>>, uint64_t> values;
};

class OtlpBuilder {
public:
	OtlpBuilder(const Profile &profile, const ReportOptions &options)
		: profile_(profile), options_(options), links_(zero_link()), location_of_frame_(profile.frames.size(), 0)
	{
	}
	std::string encode();

private:
	static std::string zero_link()
	{
		// The spec's preferred zero link: ids of their full lengths, all zero.
		ProtoMessage link;
		link.add_bytes(link_field::trace_id, std::string(16, '\0'));
		link.add_bytes(link_field::span_id, std::string(8, '\0'));
		return link.take();
	}
	// protobuf's strings are UTF-8, and a name may be any bytes (a hostile file name).
	uint64_t string_index(std::string_view text) { return strings_.index(valid_utf8(text)); }
	uint64_t attribute(std::string_view key, std::string_view value);
	uint64_t attribute(std::string_view key, int64_t value);
	uint64_t mapping_index(const Frame &frame);
	uint64_t function_index(const Frame &frame);
	uint64_t location_index(const std::vector<uint32_t> &stack, size_t i, size_t end);
	uint64_t stack_index(const Sample &sample);
	std::string_view executable(uint32_t pid) const;
	void find_executables();
	void add_sample(const Sample &sample);
	std::string resource(const std::string &container, const ResourceSamples &samples);
	std::string profile(const ResourceSamples &samples);

	const Profile &profile_;
	const ReportOptions &options_;
	Table strings_, attributes_, mappings_, functions_, locations_, stacks_, links_;
	uint64_t kernel_mapping_ = 0;
	std::vector<uint64_t> location_of_frame_; // frame index -> location index, 0 until seen
	std::unordered_map<uint32_t, std::string_view> executables_; // pid -> its program's file
	std::map<std::string, ResourceSamples> resources_; // by container id
	ProtoMessage scratch_, value_;
	std::vector<uint64_t> indices_;
};

uint64_t OtlpBuilder::attribute(std::string_view key, std::string_view value)
{
	value_.clear();
	value_.add_bytes(any_value_field::string_value, valid_utf8(value));
	scratch_.clear();
	scratch_.add_uint(attribute_field::key_strindex, string_index(key));
	scratch_.add_message(attribute_field::value, value_);
	return attributes_.index(scratch_.take());
}

uint64_t OtlpBuilder::attribute(std::string_view key, int64_t value)
{
	value_.clear();
	value_.add_int(any_value_field::int_value, value);
	scratch_.clear();
	scratch_.add_uint(attribute_field::key_strindex, string_index(key));
	scratch_.add_message(attribute_field::value, value_);
	return attributes_.index(scratch_.take());
}

uint64_t OtlpBuilder::mapping_index(const Frame &frame)
{
	ProtoMessage mapping;
	if (frame.kind == FrameKind::Kernel) {
		if (kernel_mapping_)
			return kernel_mapping_;
		// One mapping covering every kernel address, as perf's converter does.
		uint64_t start = UINT64_MAX, limit = 0;
		for (const Frame &f : profile_.frames)
			if (f.kind == FrameKind::Kernel) {
				start = std::min(start, f.address);
				limit = std::max(limit, f.address + 1);
			}
		mapping.add_uint(mapping_field::memory_start, start);
		mapping.add_uint(mapping_field::memory_limit, limit);
		mapping.add_uint(mapping_field::filename_strindex, string_index(kernel_mapping_name));
		return kernel_mapping_ = mappings_.index(mapping.take());
	}
	if (frame.module.empty() && frame.map_end == 0)
		return 0;
	mapping.add_uint(mapping_field::memory_start, frame.map_start);
	mapping.add_uint(mapping_field::memory_limit, frame.map_end);
	mapping.add_uint(mapping_field::file_offset, frame.map_offset);
	mapping.add_uint(mapping_field::filename_strindex, string_index(frame.module));
	if (!frame.build_id.empty())
		mapping.add_packed(mapping_field::attribute_indices,
				   {attribute("process.executable.build_id.gnu", std::string_view(frame.build_id))});
	return mappings_.index(mapping.take());
}

uint64_t OtlpBuilder::function_index(const Frame &frame)
{
	// A runtime's function is its qualified name; its file and line have fields of their own.
	const uint64_t name = string_index(frame_kind_rule(frame.kind).runtime ? frame.name : frame_label(frame));
	ProtoMessage function;
	function.add_uint(function_field::name_strindex, name);
	function.add_uint(function_field::system_name_strindex, name);
	function.add_uint(function_field::filename_strindex, string_index(frame.source_file));
	return functions_.index(function.take());
}

// The location of stack[i, end), frames inlined at one address, as its lines: the innermost
// first, the caller last.
uint64_t OtlpBuilder::location_index(const std::vector<uint32_t> &stack, size_t i, size_t end)
{
	const Frame &first = profile_.frames[stack[i]];
	uint64_t &cached = location_of_frame_[stack[i]];
	if (end == i + 1 && cached)
		return cached;
	ProtoMessage location, line;
	location.add_uint(location_field::mapping_index, mapping_index(first));
	location.add_uint(location_field::address, first.address);
	for (size_t j = i; j < end; j++) {
		const Frame &frame = profile_.frames[stack[j]];
		line.clear();
		line.add_uint(line_field::function_index, function_index(frame));
		line.add_int(line_field::line, frame.line);
		location.add_message(location_field::lines, line);
	}
	location.add_packed(location_field::attribute_indices, {attribute("profile.frame.type", frame_type(first.kind))});
	const uint64_t index = locations_.index(location.take());
	if (end == i + 1)
		cached = index;
	return index;
}

uint64_t OtlpBuilder::stack_index(const Sample &sample)
{
	indices_.clear();
	for_each_location(profile_, sample, [&](const std::vector<uint32_t> &stack, size_t i, size_t end) {
		indices_.push_back(location_index(stack, i, end));
	});
	ProtoMessage stack;
	stack.add_packed(stack_field::location_indices, indices_);
	return stacks_.index(stack.take());
}

// The model keeps no /proc/PID/exe: a process's program is the file its stacks most often
// start in that is no shared library (the root-most such frame of each sample: a thread's
// stack starts in libc, and its first frame of the program's own is the program).
void OtlpBuilder::find_executables()
{
	std::unordered_map<uint32_t, std::map<std::string_view, uint64_t>> counts;
	for (const Sample &sample : profile_.samples)
		for (auto it = sample.user.rbegin(); it != sample.user.rend(); ++it) {
			const Frame &frame = profile_.frames[*it];
			const std::string_view file = std::string_view(frame.module).substr(frame.module.rfind('/') + 1);
			if (frame.kind != FrameKind::Native || !frame.module.starts_with('/') ||
			    file.find(".so") != std::string_view::npos || frame.module.starts_with("/tmp/perf-"))
				continue;
			counts[sample.pid][frame.module] += sample.count;
			break;
		}
	for (const auto &[pid, files] : counts)
		executables_[pid] = std::max_element(files.begin(), files.end(), [](const auto &a, const auto &b) {
					    return a.second < b.second;
				    })->first;
}

std::string_view OtlpBuilder::executable(uint32_t pid) const
{
	auto it = executables_.find(pid);
	return it == executables_.end() ? std::string_view() : it->second;
}

void OtlpBuilder::add_sample(const Sample &sample)
{
	ResourceSamples &resource = resources_[sample.container];
	std::vector<uint64_t> attributes{attribute("thread.name", std::string_view(sample.comm))};
	if (sample.tid)
		attributes.push_back(attribute("thread.id", int64_t(sample.tid)));
	// The process is the resource's on a run of one process, each sample's on a run of many.
	if (profile_.single_pid) {
		resource.pid = sample.pid;
	} else {
		attributes.push_back(attribute("process.pid", int64_t(sample.pid)));
		if (const std::string_view path = executable(sample.pid); !path.empty()) {
			attributes.push_back(attribute("process.executable.name", path.substr(path.rfind('/') + 1)));
			attributes.push_back(attribute("process.executable.path", path));
		}
	}
	std::sort(attributes.begin(), attributes.end());
	// Samples alike in stack and attributes are one: the spec's identity of a sample.
	resource.values[{stack_index(sample), std::move(attributes)}] += sample.count;
}

// A Resource message: service.name and host.name, the container, the process of a run of
// one; OTEL_RESOURCE_ATTRIBUTES' own pairs win over these (but service.name, settled before).
std::string OtlpBuilder::resource(const std::string &container, const ResourceSamples &samples)
{
	ProtoMessage resource, pair, value;
	auto add = [&](std::string_view key, const ProtoMessage &any_value) {
		pair.clear();
		pair.add_bytes(key_value_field::key, valid_utf8(key));
		pair.add_message(key_value_field::value, any_value);
		resource.add_message(resource_field::attributes, pair);
	};
	auto given = [&](std::string_view key) {
		return std::any_of(options_.resource_attributes.begin(), options_.resource_attributes.end(),
				   [&](const auto &attribute) { return attribute.first == key; });
	};
	auto add_text = [&](std::string_view key, std::string_view text) {
		if (text.empty() || (key != "service.name" && given(key)))
			return;
		value.clear();
		value.add_bytes(any_value_field::string_value, valid_utf8(text));
		add(key, value);
	};
	// What OpenTelemetry's SDKs call a service that has no name.
	// (Each branch a view: a std::string of the three would be a temporary, gone at the ;.)
	const std::string_view service = !options_.service_name.empty() ? std::string_view(options_.service_name)
					 : !profile_.host.empty()       ? std::string_view(profile_.host)
									: std::string_view("unknown_service");
	add_text("service.name", service);
	add_text("host.name", profile_.host);
	add_text("container.id", container);
	if (samples.pid) {
		if (!given("process.pid")) {
			value.clear();
			value.add_int(any_value_field::int_value, samples.pid);
			add("process.pid", value);
		}
		const std::string_view path = executable(samples.pid);
		add_text("process.executable.name", path.substr(path.rfind('/') + 1));
		add_text("process.executable.path", path);
	}
	for (const auto &[key, text] : options_.resource_attributes)
		if (key != "service.name") {
			value.clear();
			value.add_bytes(any_value_field::string_value, valid_utf8(text));
			add(key, value);
		}
	return resource.take();
}

// A Profile message of the resource's samples.
std::string OtlpBuilder::profile(const ResourceSamples &samples)
{
	ProtoMessage profile, value_type, sample;
	auto add_value_type = [&](uint32_t field, std::string_view type, std::string_view unit) {
		value_type.clear();
		value_type.add_uint(value_type_field::type_strindex, string_index(type));
		value_type.add_uint(value_type_field::unit_strindex, string_index(unit));
		profile.add_message(field, value_type);
	};
	if (profile_.off_cpu) {
		// Every switch off the CPU is counted, none sampled: no period.
		add_value_type(profile_field::sample_type, options_.off_cpu_type, "nanoseconds");
	} else {
		add_value_type(profile_field::sample_type, "samples", "count");
		add_value_type(profile_field::period_type, "cpu", "nanoseconds");
		profile.add_int(profile_field::period, int64_t(profile_.period_ns));
	}
	profile.add_fixed64(profile_field::time_unix_nano, uint64_t(profile_.start_time_ns));
	profile.add_uint(profile_field::duration_nano, uint64_t(std::llround(profile_.duration_s * 1e9)));
	for (const auto &[identity, count] : samples.values) {
		sample.clear();
		sample.add_uint(sample_field::stack_index, identity.first);
		sample.add_packed(sample_field::attribute_indices, identity.second);
		sample.add_packed(sample_field::values, {count});
		profile.add_message(profile_field::samples, sample);
	}
	return profile.take();
}

std::string OtlpBuilder::encode()
{
	find_executables();
	for (const Sample &sample : profile_.samples)
		if (sample.count)
			add_sample(sample);
	if (resources_.empty())
		resources_[""].pid = profile_.single_pid; // no samples: still a profile, of nothing

	ProtoMessage request, resource_profiles, scope_profiles, scope, dictionary;
	scope.add_bytes(scope_field::name, "profile");
	scope.add_bytes(scope_field::version, PROFILE_VERSION);
	for (const auto &[container, samples] : resources_) {
		scope_profiles.clear();
		scope_profiles.add_message(scope_profiles_field::scope, scope);
		scope_profiles.add_bytes(scope_profiles_field::profiles, profile(samples));
		resource_profiles.clear();
		resource_profiles.add_bytes(resource_profiles_field::resource, resource(container, samples));
		resource_profiles.add_message(resource_profiles_field::scope_profiles, scope_profiles);
		request.add_message(request_field::resource_profiles, resource_profiles);
	}
	mappings_.write(dictionary, dictionary_field::mapping_table);
	locations_.write(dictionary, dictionary_field::location_table);
	functions_.write(dictionary, dictionary_field::function_table);
	links_.write(dictionary, dictionary_field::link_table);
	strings_.write(dictionary, dictionary_field::string_table);
	attributes_.write(dictionary, dictionary_field::attribute_table);
	stacks_.write(dictionary, dictionary_field::stack_table);
	request.add_message(request_field::dictionary, dictionary);
	return request.take();
}

} // namespace

void write_otlp(std::ostream &out, const Profile &profile, const ReportOptions &options)
{
	OtlpBuilder builder(profile, options);
	const std::string request = builder.encode();
	out.write(request.data(), std::streamsize(request.size()));
}
