// report/stacks.cpp: the text reports: BCC's multi-line stacks and folded lines.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <unordered_map>

#include "report/report.h"
#include "syms/symbolizer.h"

namespace {

// Renders each sample with `render`, adds up the counts of samples that render the same
// (different addresses in one function look alike once named), and writes them coldest
// first, so the hottest stack ends the report as in BCC.
template <typename Render, typename Write>
void write_merged(const Profile &profile, Render render, Write write)
{
	struct Entry {
		std::string text;
		uint64_t count;
	};
	std::vector<Entry> entries;
	std::unordered_map<std::string, size_t> index;
	entries.reserve(profile.samples.size());
	for (const Sample &sample : profile.samples) {
		std::string text = render(sample);
		auto [it, inserted] = index.try_emplace(text, entries.size());
		if (inserted)
			entries.push_back({std::move(text), sample.count});
		else
			entries[it->second].count += sample.count;
	}
	std::stable_sort(entries.begin(), entries.end(),
			 [](const Entry &a, const Entry &b) { return a.count < b.count; });
	for (const Entry &entry : entries)
		write(entry.text, entry.count);
}

std::string label(const Frame &frame, const ReportOptions &options)
{
	std::string text = frame_label(frame);
	if (options.annotations && frame.kind == FrameKind::Kernel)
		text += "_[k]";
	return text;
}

void write_verbose_frame(std::ostream &out, const Frame &frame, const ReportOptions &options)
{
	char address[32];
	std::snprintf(address, sizeof(address), "0x%" PRIx64, frame.address);
	out << "    " << address << ' ' << label(frame, options);
	if (frame.named()) {
		char offset[32];
		std::snprintf(offset, sizeof(offset), "+0x%" PRIx64, frame.symbol_offset);
		out << offset;
	}
	if (frame.kind == FrameKind::Kernel)
		out << " [" << (frame.module.empty() ? "kernel" : frame.module) << ']';
	else if (!frame.module.empty())
		out << " (" << frame.module << ')';
	if (!frame.source_file.empty()) {
		out << ' ' << frame.source_file;
		if (frame.line)
			out << ':' << frame.line;
	}
	if (frame.inlined)
		out << " [inlined]";
	out << '\n';
}

// Folded lines are split on ';' and on the last space: keep names from breaking that.
std::string folded_safe(std::string text)
{
	for (char &c : text)
		if (c == ';')
			c = ':';
		else if (c == '\n' || c == '\r')
			c = ' ';
	return text;
}

} // namespace

void write_stacks(std::ostream &out, const Profile &profile, const ReportOptions &options)
{
	auto render = [&](const Sample &sample) {
		std::ostringstream text;
		auto write_frame = [&](uint32_t index) {
			const Frame &frame = profile.frames[index];
			if (options.verbose)
				write_verbose_frame(text, frame, options);
			else
				text << "    " << label(frame, options) << '\n';
		};
		for (uint32_t index : sample.kernel)
			write_frame(index);
		if (options.delimited && !sample.kernel.empty() && !sample.user.empty())
			text << "    --\n";
		for (uint32_t index : sample.user)
			write_frame(index);
		char line[64];
		std::snprintf(line, sizeof(line), "    %-16s ", "-");
		text << line << sample.comm << " (" << sample.pid << ")\n";
		return text.str();
	};
	write_merged(profile, render, [&](const std::string &text, uint64_t count) {
		out << text << "        " << count << "\n\n";
	});
}

void write_folded(std::ostream &out, const Profile &profile, const ReportOptions &options)
{
	auto render = [&](const Sample &sample) {
		std::string line = folded_safe(sample.comm);
		if (options.fold_pid)
			line += '-' + std::to_string(sample.pid);
		for (auto it = sample.user.rbegin(); it != sample.user.rend(); ++it)
			line += ';' + folded_safe(label(profile.frames[*it], options));
		if (options.delimited && !sample.kernel.empty() && !sample.user.empty())
			line += ";-";
		for (auto it = sample.kernel.rbegin(); it != sample.kernel.rend(); ++it)
			line += ';' + folded_safe(label(profile.frames[*it], options));
		return line;
	};
	write_merged(profile, render, [&](const std::string &line, uint64_t count) {
		out << line << ' ' << count << '\n';
	});
}

void write_report(std::ostream &out, ReportFormat format, const Profile &profile,
		  const ReportOptions &options)
{
	switch (format) {
	case ReportFormat::Stacks:
		write_stacks(out, profile, options);
		break;
	case ReportFormat::Folded:
		write_folded(out, profile, options);
		break;
	case ReportFormat::Svg:
		write_svg(out, profile, options);
		break;
	case ReportFormat::Pprof:
		write_pprof(out, profile);
		break;
	}
}

std::optional<ReportFormat> format_from_name(std::string_view name)
{
	if (name == "stacks")
		return ReportFormat::Stacks;
	if (name == "folded")
		return ReportFormat::Folded;
	if (name == "svg")
		return ReportFormat::Svg;
	if (name == "pprof")
		return ReportFormat::Pprof;
	return std::nullopt;
}

std::optional<ReportFormat> format_from_path(std::string_view path)
{
	auto ends_with = [&](std::string_view suffix) { return path.ends_with(suffix); };
	if (ends_with(".svg"))
		return ReportFormat::Svg;
	if (ends_with(".pb.gz"))
		return ReportFormat::Pprof;
	if (ends_with(".folded"))
		return ReportFormat::Folded;
	if (ends_with(".txt"))
		return ReportFormat::Stacks;
	return std::nullopt;
}
