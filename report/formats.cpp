// report/formats.cpp: the table of report formats, and what reads it.
#include "report/formats.h"

#include <algorithm>
#include <sstream>

namespace {

void write_pprof_row(std::ostream &out, const Profile &profile, const ReportOptions &options)
{
	write_pprof(out, profile, options.off_cpu_type);
}

bool needed(ReportNeed need, const ReportOptions &options)
{
	switch (need) {
	case ReportNeed::Never: return false;
	case ReportNeed::WithVerbose: return options.verbose;
	case ReportNeed::WithFoldPid: return options.fold_pid;
	case ReportNeed::Always: return true;
	}
	return false;
}

} // namespace

std::span<const ReportFormatRow> report_formats()
{
	// In --format's order. Built on first use: the option table, built before main, reads it.
	// The extensions' ranks keep the order --help always listed them in: the pictures first.
	static const ReportFormatRow formats[] = {
		{ReportFormat::Stacks, "stacks", {".txt"}, "multi-line stacks", 4, write_stacks, false,
		 ReportNeed::Always, ReportNeed::WithVerbose},
		{ReportFormat::Folded, "folded", {".folded"}, "", 3, write_folded, false,
		 ReportNeed::WithFoldPid, ReportNeed::Never},
		{ReportFormat::Svg, "svg", {".svg"}, "flame graph", 1, write_svg, false,
		 ReportNeed::WithFoldPid, ReportNeed::Never},
		{ReportFormat::Pprof, "pprof", {".pb.gz"}, "pprof", 2, write_pprof_row, true,
		 ReportNeed::Always, ReportNeed::Always},
		{ReportFormat::Otlp, "otlp", {".otlp"}, "OTLP profiles", 5, write_otlp, true,
		 ReportNeed::Always, ReportNeed::Always},
	};
	return formats;
}

const ReportFormatRow &report_format(ReportFormat format)
{
	const std::span<const ReportFormatRow> formats = report_formats();
	return *std::find_if(formats.begin(), formats.end(),
			     [&](const ReportFormatRow &row) { return row.format == format; });
}

void write_report(std::ostream &out, ReportFormat format, const Profile &profile, const ReportOptions &options)
{
	report_format(format).write(out, profile, options);
}

RenderedProfile render_report(ReportFormat format, const Profile &profile, const ReportOptions &options)
{
	std::ostringstream out;
	write_report(out, format, profile, options);
	return {format, std::move(out).str()};
}

ReportDetail report_detail(ReportFormat format, const ReportOptions &options)
{
	const ReportFormatRow &row = report_format(format);
	ReportDetail detail;
	detail.pids = needed(row.pids, options);
	detail.addresses = needed(row.addresses, options);
	return detail;
}

std::optional<ReportFormat> format_from_name(std::string_view name)
{
	for (const ReportFormatRow &row : report_formats())
		if (name == row.name)
			return row.format;
	return std::nullopt;
}

std::optional<ReportFormat> format_from_path(std::string_view path)
{
	for (const ReportFormatRow &row : report_formats())
		for (std::string_view suffix : row.suffixes)
			if (path.ends_with(suffix))
				return row.format;
	return std::nullopt;
}

std::string report_format_names(std::string_view separator)
{
	std::string names;
	for (const ReportFormatRow &row : report_formats())
		names += (names.empty() ? "" : std::string(separator)) + row.name;
	return names;
}

std::string report_suffix_list(bool notes)
{
	std::vector<const ReportFormatRow *> rows;
	for (const ReportFormatRow &row : report_formats())
		rows.push_back(&row);
	std::sort(rows.begin(), rows.end(),
		  [](const ReportFormatRow *a, const ReportFormatRow *b) { return a->suffix_rank < b->suffix_rank; });
	std::string list;
	for (const ReportFormatRow *row : rows)
		for (std::string_view suffix : row->suffixes) {
			list += list.empty() ? "(" : ", ";
			list += suffix;
			if (notes && !row->suffix_note.empty())
				list += ' ' + std::string(row->suffix_note);
		}
	return list + ')';
}
