// report/stacks.cpp: the text reports: BCC's multi-line stacks and folded lines.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "report/report.h"

namespace {

// One sample's text, as the report will print it (without its count).
using Render = void (*)(std::string &text, const Sample &sample, const std::vector<std::string> &pieces,
			const ReportOptions &options);

// Renders each sample into one reused buffer, adds up the counts of samples that render
// the same (different addresses in one function look alike once named), and writes them
// coldest first, so the hottest stack ends the report as in BCC. Each frame's piece of text
// is made once, however many stacks hold it: the work is linear in the report's size,
// plus the sort of the distinct stacks by count.
template <typename Write>
void write_merged(const Profile &profile, const std::vector<std::string> &pieces, const ReportOptions &options,
		  Render render, Write write)
{
	struct Entry {
		std::string text;
		uint64_t count;
	};
	std::vector<Entry> entries;
	// Reserved in full: the index holds views into the entries' strings, which must not move.
	entries.reserve(profile.samples.size());
	std::unordered_map<std::string_view, size_t> index;
	index.reserve(profile.samples.size());
	std::string text;
	for (const Sample &sample : profile.samples) {
		text.clear();
		render(text, sample, pieces, options);
		auto it = index.find(text);
		if (it != index.end()) {
			entries[it->second].count += sample.count;
			continue;
		}
		entries.push_back({text, sample.count});
		index.emplace(entries.back().text, entries.size() - 1);
	}
	index.clear();
	std::vector<const Entry *> order;
	order.reserve(entries.size());
	for (const Entry &entry : entries)
		order.push_back(&entry);
	std::stable_sort(order.begin(), order.end(), [](const Entry *a, const Entry *b) { return a->count < b->count; });
	for (const Entry *entry : order)
		write(entry->text, entry->count);
}

std::string label(const Frame &frame, const ReportOptions &options)
{
	std::string text = frame_label(frame);
	// stackcollapse-perf.pl's annotations, which flamegraph.pl's palettes read.
	if (options.annotations && frame.kind == FrameKind::Kernel)
		text += "_[k]";
	else if (options.annotations && frame.inlined)
		text += "_[i]";
	return text;
}

std::string verbose_line(const Frame &frame, const ReportOptions &options)
{
	const FrameKindRule &rule = frame_kind_rule(frame.kind);
	const std::string place = frame.line ? frame.source_file + ':' + std::to_string(frame.line) : frame.source_file;
	std::string line;
	if (rule.runtime) {
		// A runtime's function has no address of its own: its whole file, the line, and
		// what its runtime adds.
		line = "    " + frame.name + " (" + place + ')';
		if (!frame.detail.empty())
			line += ' ' + frame.detail;
	} else if (!frame.address && frame.module.empty() && frame.kind != FrameKind::Kernel) {
		// A frame with no address of its own ("[truncated]", a thread's state): its text alone.
		return "    " + label(frame, options) + '\n';
	} else {
		char number[32];
		std::snprintf(number, sizeof(number), "    0x%" PRIx64 " ", frame.address);
		line = number + label(frame, options);
		// An inlined function has no symbol of its own to count an offset from.
		if (frame.named() && !frame.inlined) {
			std::snprintf(number, sizeof(number), "+0x%" PRIx64, frame.symbol_offset);
			line += number;
		}
		if (frame.kind == FrameKind::Kernel)
			line += " [" + (frame.module.empty() ? std::string("kernel") : frame.module) + ']';
		else if (!frame.module.empty())
			line += " (" + frame.module + ')';
		if (!frame.source_file.empty())
			line += ' ' + place;
	}
	if (frame.inlined)
		line += " [inlined]";
	if (rule.runtime)
		line += std::string(" [") + rule.name + ']';
	return line + '\n';
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

void append_number(std::string &text, uint64_t n)
{
	char digits[24];
	int size = std::snprintf(digits, sizeof(digits), "%" PRIu64, n);
	text.append(digits, size_t(size));
}

void render_stacks(std::string &text, const Sample &sample, const std::vector<std::string> &lines,
		   const ReportOptions &options)
{
	for (uint32_t index : sample.kernel)
		text += lines[index];
	if (options.delimited && !sample.kernel.empty() && !sample.user.empty())
		text += "    --\n";
	for (uint32_t index : sample.user)
		text += lines[index];
	text += "    -                "; // BCC's "%-16s " of "-"
	text += sample.comm;
	text += " (";
	append_number(text, sample.pid);
	text += ")\n";
}

void render_folded(std::string &text, const Sample &sample, const std::vector<std::string> &frames,
		   const ReportOptions &options)
{
	text += folded_safe(sample.comm);
	if (options.fold_pid) {
		text += '-';
		append_number(text, sample.pid);
		append_container(text, sample);
	}
	for (auto it = sample.user.rbegin(); it != sample.user.rend(); ++it)
		text += frames[*it];
	if (options.delimited && !sample.kernel.empty() && !sample.user.empty())
		text += ";-";
	for (auto it = sample.kernel.rbegin(); it != sample.kernel.rend(); ++it)
		text += frames[*it];
}

} // namespace

void write_stacks(std::ostream &out, const Profile &profile, const ReportOptions &options)
{
	std::vector<std::string> lines;
	lines.reserve(profile.frames.size());
	for (const Frame &frame : profile.frames)
		lines.push_back(options.verbose ? verbose_line(frame, options) : "    " + label(frame, options) + '\n');
	write_merged(profile, lines, options, render_stacks, [&](const std::string &text, uint64_t count) {
		out << text << "        " << shown_count(profile, count) << (profile.off_cpu ? " µs off-CPU\n\n" : "\n\n");
	});
}

void write_folded(std::ostream &out, const Profile &profile, const ReportOptions &options)
{
	std::vector<std::string> frames;
	frames.reserve(profile.frames.size());
	for (const Frame &frame : profile.frames)
		frames.push_back(';' + folded_safe(label(frame, options)));
	write_merged(profile, frames, options, render_folded, [&](const std::string &line, uint64_t count) {
		// Less than half a microsecond off the CPU rounds to nothing: no line.
		if (const uint64_t shown = shown_count(profile, count))
			out << line << ' ' << shown << '\n';
	});
}
