// report/pprof.cpp: the profile as a gzipped pprof profile.proto message (go tool pprof).

#include <algorithm>
#include <climits>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "report/gzip.h"
#include "report/locations.h"
#include "report/protobuf.h"
#include "report/report.h"
#include "report/utf8.h"

namespace {

// Field numbers from github.com/google/pprof, proto/profile.proto (package perftools.profiles).
namespace profile_field {
constexpr uint32_t sample_type = 1, sample = 2, mapping = 3, location = 4, function = 5,
		   string_table = 6, time_nanos = 9, duration_nanos = 10, period_type = 11,
		   period = 12, comment = 13, default_sample_type = 14;
}
namespace value_type_field {
constexpr uint32_t type = 1, unit = 2;
}
namespace sample_field {
constexpr uint32_t location_id = 1, value = 2, label = 3;
}
namespace label_field {
constexpr uint32_t key = 1, str = 2, num = 3;
}
namespace mapping_field {
constexpr uint32_t id = 1, memory_start = 2, memory_limit = 3, file_offset = 4, filename = 5,
		   build_id = 6, has_functions = 7, has_filenames = 8, has_line_numbers = 9,
		   has_inline_frames = 10;
}
namespace location_field {
constexpr uint32_t id = 1, mapping_id = 2, address = 3, line = 4;
}
namespace line_field {
constexpr uint32_t function_id = 1, line = 2;
}
namespace function_field {
constexpr uint32_t id = 1, name = 2, system_name = 3, filename = 4;
}

// perf's name for the kernel image; pprof recognizes it.
constexpr std::string_view kernel_mapping_name = "[kernel.kallsyms]";

struct Mapping {
	uint64_t start = 0, limit = 0, offset = 0;
	int64_t filename = 0, build_id = 0;
	bool has_filenames = false, has_line_numbers = false, has_inline_frames = false;
	bool kernel = false, library = false;
	uint64_t samples = 0;     // samples with a frame in it
	const Sample *last = nullptr; // the sample that last counted here
};

struct Location {
	uint64_t mapping = 0; // index in PprofBuilder::mappings_ + 1, 0 for none
	uint64_t address = 0;
	std::vector<std::pair<uint64_t, uint32_t>> lines; // function id, line; innermost first
};

// Builds the message table by table: strings, mappings, functions and locations are
// each stored once and referred to by id, as the format asks. Ids start at 1.
class PprofBuilder {
public:
	PprofBuilder(const Profile &profile, std::string_view off_cpu_type) : profile_(profile), off_cpu_type_(off_cpu_type)
	{
		string_id(""); // string_table[0] must be ""
		pid_key_ = string_id("pid");
		comm_key_ = string_id("comm");
		cgroup_key_ = string_id("cgroup");
		container_key_ = string_id("container_id");
		if (!profile.host.empty()) {
			host_key_ = string_id("host");
			host_ = string_id(profile.host);
		}
		location_of_frame_.assign(profile.frames.size(), 0);
	}

	std::string encode();

private:
	// protobuf's strings are UTF-8, and a name may be any bytes (a hostile file name).
	int64_t string_id(std::string_view text)
	{
		auto [it, inserted] = strings_.try_emplace(valid_utf8(text), int64_t(string_table_.size()));
		if (inserted)
			string_table_.push_back(&it->first);
		return it->second;
	}

	uint64_t mapping_of(const Frame &frame);
	uint64_t function_id(const Frame &frame);
	uint64_t location_id(const Sample &sample, const std::vector<uint32_t> &stack, size_t i, size_t end);
	void add_sample(const Sample &sample);
	std::vector<uint64_t> mapping_ids() const;

	const Profile &profile_;
	std::string_view off_cpu_type_;
	std::unordered_map<std::string, int64_t> strings_;
	std::vector<const std::string *> string_table_;
	int64_t pid_key_ = 0, comm_key_ = 0, cgroup_key_ = 0, container_key_ = 0, host_key_ = 0, host_ = 0;
	std::unordered_map<std::string, uint64_t> mapping_index_, function_ids_, location_ids_;
	std::vector<Mapping> mappings_;
	uint64_t kernel_mapping_ = 0;
	std::vector<Location> locations_;
	std::vector<uint64_t> location_of_frame_; // frame index -> location id, 0 until seen
	ProtoMessage functions_, samples_;
	ProtoMessage scratch_, line_, label_;
	std::vector<uint64_t> ids_, values_;
};

// The mapping's index + 1, or 0 when the frame has none (pprof allows that).
uint64_t PprofBuilder::mapping_of(const Frame &frame)
{
	if (frame.kind == FrameKind::Kernel) {
		if (!kernel_mapping_) {
			// One mapping covering every kernel address, as perf's converter does.
			Mapping kernel;
			kernel.kernel = true;
			kernel.start = UINT64_MAX;
			for (const Frame &f : profile_.frames) {
				if (f.kind == FrameKind::Kernel) {
					kernel.start = std::min(kernel.start, f.address);
					kernel.limit = std::max(kernel.limit, f.address + 1);
				}
			}
			kernel.filename = string_id(kernel_mapping_name);
			mappings_.push_back(kernel);
			kernel_mapping_ = mappings_.size();
		}
		return kernel_mapping_;
	}
	if (frame.module.empty() && frame.map_end == 0)
		return 0;
	std::string key = frame.module;
	key += '\0';
	key += frame.build_id;
	key.append(reinterpret_cast<const char *>(&frame.map_start), sizeof(frame.map_start));
	key.append(reinterpret_cast<const char *>(&frame.map_end), sizeof(frame.map_end));
	key.append(reinterpret_cast<const char *>(&frame.map_offset), sizeof(frame.map_offset));
	auto [it, inserted] = mapping_index_.try_emplace(std::move(key), mappings_.size() + 1);
	if (inserted) {
		Mapping mapping;
		mapping.start = frame.map_start;
		mapping.limit = frame.map_end;
		mapping.offset = frame.map_offset;
		mapping.filename = string_id(frame.module);
		mapping.build_id = string_id(frame.build_id);
		const std::string_view module = frame.module;
		const std::string_view file = module.substr(module.rfind('/') + 1);
		mapping.library = file.find(".so") != std::string_view::npos || file.starts_with('[');
		mappings_.push_back(mapping);
	}
	return it->second;
}

uint64_t PprofBuilder::function_id(const Frame &frame)
{
	// A runtime's function is its qualified name; its file and line have fields of their own.
	const std::string name = frame_kind_rule(frame.kind).runtime ? frame.name : frame_label(frame);
	std::string key = name;
	key += '\0';
	key += frame.source_file;
	auto [it, inserted] = function_ids_.try_emplace(std::move(key), function_ids_.size() + 1);
	if (inserted) {
		scratch_.clear();
		scratch_.add_uint(function_field::id, it->second);
		const int64_t name_id = string_id(name);
		scratch_.add_int(function_field::name, name_id);
		scratch_.add_int(function_field::system_name, name_id);
		scratch_.add_int(function_field::filename, string_id(frame.source_file));
		functions_.add_message(profile_field::function, scratch_);
	}
	return it->second;
}

// The location of stack[i, end), frames inlined at one address: pprof keeps them as the
// lines of one location, innermost first.
uint64_t PprofBuilder::location_id(const Sample &sample, const std::vector<uint32_t> &stack, size_t i,
				   size_t end)
{
	const Frame &first = profile_.frames[stack[i]];

	uint64_t id = end == i + 1 ? location_of_frame_[stack[i]] : 0;
	if (!id) {
		Location location;
		location.mapping = mapping_of(first);
		location.address = first.address;
		std::string key;
		key.append(reinterpret_cast<const char *>(&location.mapping), sizeof(uint64_t));
		key.append(reinterpret_cast<const char *>(&first.address), sizeof(uint64_t));
		for (size_t j = i; j < end; j++) {
			const Frame &frame = profile_.frames[stack[j]];
			location.lines.emplace_back(function_id(frame), frame.line);
			key.append(reinterpret_cast<const char *>(&location.lines.back().first),
				   sizeof(uint64_t));
			key.append(reinterpret_cast<const char *>(&frame.line), sizeof(frame.line));
			if (location.mapping) {
				Mapping &m = mappings_[location.mapping - 1];
				m.has_filenames |= !frame.source_file.empty();
				m.has_line_numbers |= frame.line != 0;
				m.has_inline_frames |= end > i + 1;
			}
		}
		auto [it, inserted] = location_ids_.try_emplace(std::move(key), locations_.size() + 1);
		if (inserted)
			locations_.push_back(std::move(location));
		id = it->second;
		if (end == i + 1)
			location_of_frame_[stack[i]] = id;
	}
	if (const uint64_t mapping = locations_[id - 1].mapping) {
		Mapping &m = mappings_[mapping - 1];
		if (m.last != &sample) {
			m.last = &sample;
			m.samples += sample.count;
		}
	}
	return id;
}

void PprofBuilder::add_sample(const Sample &sample)
{
	// pprof wants the leaf first.
	ids_.clear();
	for_each_location(profile_, sample, [&](const std::vector<uint32_t> &stack, size_t i, size_t end) {
		ids_.push_back(location_id(sample, stack, i, end));
	});

	scratch_.clear();
	scratch_.add_packed(sample_field::location_id, ids_);
	if (profile_.off_cpu)
		values_ = {sample.count}; // nanoseconds
	else
		values_ = {sample.count, sample.count * profile_.period_ns};
	scratch_.add_packed(sample_field::value, values_);
	// The process as labels: pid, comm, its cgroup and container where known, the host.
	label_.clear();
	label_.add_int(label_field::key, pid_key_);
	label_.add_int(label_field::num, sample.pid);
	scratch_.add_message(sample_field::label, label_);
	auto add_label = [&](int64_t key, int64_t value) {
		label_.clear();
		label_.add_int(label_field::key, key);
		label_.add_int(label_field::str, value);
		scratch_.add_message(sample_field::label, label_);
	};
	add_label(comm_key_, string_id(sample.comm));
	if (!sample.cgroup.empty())
		add_label(cgroup_key_, string_id(sample.cgroup));
	if (!sample.container.empty())
		add_label(container_key_, string_id(sample.container));
	if (!sample.waker.empty())
		add_label(string_id("waker"), string_id(sample.waker)); // --wakers
	if (host_key_)
		add_label(host_key_, host_);
	samples_.add_message(profile_field::sample, scratch_);
}

// Mapping ids in the order pprof reads best: profile.proto makes the first mapping the main
// binary, which pprof names the profile after ("File: app"), so the busiest executable goes
// first and the kernel last. A run over the whole machine or several processes has no main
// binary: id 1 is then left to an empty mapping (see encode) and the others follow.
std::vector<uint64_t> PprofBuilder::mapping_ids() const
{
	const uint64_t first = profile_.single_pid ? 1 : 2;
	std::vector<uint64_t> order(mappings_.size());
	for (size_t i = 0; i < order.size(); i++)
		order[i] = i;
	auto rank = [&](const Mapping &m) { return m.kernel ? 2 : m.library ? 1 : 0; };
	std::stable_sort(order.begin(), order.end(), [&](uint64_t a, uint64_t b) {
		const Mapping &x = mappings_[a], &y = mappings_[b];
		if (rank(x) != rank(y))
			return rank(x) < rank(y);
		return rank(x) == 0 && x.samples > y.samples;
	});
	std::vector<uint64_t> ids(mappings_.size() + 1, 0);
	for (size_t i = 0; i < order.size(); i++)
		ids[order[i] + 1] = i + first;
	return ids;
}

std::string PprofBuilder::encode()
{
	for (const Sample &sample : profile_.samples)
		if (sample.count)
			add_sample(sample);

	ProtoMessage out, value_type;
	auto add_value_type = [&](uint32_t field, std::string_view type, std::string_view unit) {
		value_type.clear();
		value_type.add_int(value_type_field::type, string_id(type));
		value_type.add_int(value_type_field::unit, string_id(unit));
		out.add_message(field, value_type);
	};
	if (profile_.off_cpu) {
		// One value, the time off the CPU; a period of one sample of it (Parca's off-CPU
		// type reads ...:nanoseconds:samples:count).
		add_value_type(profile_field::sample_type, off_cpu_type_, "nanoseconds");
		add_value_type(profile_field::period_type, "samples", "count");
		out.add_int(profile_field::period, 1);
	} else {
		add_value_type(profile_field::sample_type, "samples", "count");
		add_value_type(profile_field::sample_type, "cpu", "nanoseconds");
		add_value_type(profile_field::period_type, "cpu", "nanoseconds");
		out.add_int(profile_field::period, int64_t(profile_.period_ns));
	}
	out.add_int(profile_field::time_nanos, profile_.start_time_ns);
	out.add_int(profile_field::duration_nanos, std::llround(profile_.duration_s * 1e9));
	out.add_int(profile_field::default_sample_type, string_id(profile_.off_cpu ? off_cpu_type_ : "cpu"));
	if (!profile_.command.empty())
		out.add_packed(profile_field::comment, {uint64_t(string_id(profile_.command))});

	const std::vector<uint64_t> ids = mapping_ids();
	const Mapping no_program; // no file, no addresses: pprof shows no "File:"
	std::vector<const Mapping *> by_id(mappings_.size() + (profile_.single_pid ? 1 : 2));
	if (!profile_.single_pid)
		by_id[1] = &no_program;
	for (size_t i = 0; i < mappings_.size(); i++)
		by_id[ids[i + 1]] = &mappings_[i];
	for (uint64_t id = 1; id < by_id.size(); id++) {
		const Mapping &m = *by_id[id];
		scratch_.clear();
		scratch_.add_uint(mapping_field::id, id);
		scratch_.add_uint(mapping_field::memory_start, m.start);
		scratch_.add_uint(mapping_field::memory_limit, m.limit);
		scratch_.add_uint(mapping_field::file_offset, m.offset);
		scratch_.add_int(mapping_field::filename, m.filename);
		scratch_.add_int(mapping_field::build_id, m.build_id);
		// Every location has its function already: pprof must not look for symbols.
		scratch_.add_bool(mapping_field::has_functions, true);
		scratch_.add_bool(mapping_field::has_filenames, m.has_filenames);
		scratch_.add_bool(mapping_field::has_line_numbers, m.has_line_numbers);
		scratch_.add_bool(mapping_field::has_inline_frames, m.has_inline_frames);
		out.add_message(profile_field::mapping, scratch_);
	}
	out.append(samples_);
	for (size_t i = 0; i < locations_.size(); i++) {
		const Location &location = locations_[i];
		scratch_.clear();
		scratch_.add_uint(location_field::id, i + 1);
		scratch_.add_uint(location_field::mapping_id, ids[location.mapping]);
		scratch_.add_uint(location_field::address, location.address);
		for (auto [function, line] : location.lines) {
			line_.clear();
			line_.add_uint(line_field::function_id, function);
			line_.add_int(line_field::line, line);
			scratch_.add_message(location_field::line, line_);
		}
		out.add_message(profile_field::location, scratch_);
	}
	out.append(functions_);
	for (const std::string *text : string_table_)
		out.add_bytes(profile_field::string_table, *text);
	return out.take();
}

} // namespace

void write_pprof(std::ostream &out, const Profile &profile, std::string_view off_cpu_type)
{
	PprofBuilder builder(profile, off_cpu_type);
	write_gzip(out, builder.encode());
}
