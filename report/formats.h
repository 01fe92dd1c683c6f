// report/formats.h: the report formats, one row each: what names a format on the command
// line, what writes it, and where it may go. Adding a format is a writer and a row.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

// When a format needs a detail of the samples.
enum class ReportNeed {
	Never,
	WithVerbose, // with -v
	WithFoldPid, // with -E
	Always,
};

struct ReportFormatRow {
	ReportFormat format;
	const char *name; // --format's
	// -o's extensions that name it, and what --help says of them ("" when nothing).
	std::vector<std::string_view> suffixes;
	std::string_view suffix_note;
	// Where -o's help and the "cannot tell the format" error list its extensions.
	int suffix_rank;
	void (*write)(std::ostream &out, const Profile &profile, const ReportOptions &options);
	// Not text: never written to a terminal, and with --interval one file per window.
	bool binary;
	ReportNeed pids;      // every process apart
	ReportNeed addresses; // every address apart
};

// Every format, in --format's order.
std::span<const ReportFormatRow> report_formats();
const ReportFormatRow &report_format(ReportFormat format);

// "stacks|folded|svg|pprof": every --format name, joined by separator.
std::string report_format_names(std::string_view separator);
// "(.svg, .pb.gz, .folded, .txt)" for errors; with notes, "(.svg flame graph, ...)" for --help.
std::string report_suffix_list(bool notes);
