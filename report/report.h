// report/report.h: the report writers, one per output format.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/model.h"

struct ReportOptions {
	bool delimited = false;   // -d: a delimiter between kernel and user frames
	bool annotations = false; // -a: _[k] after kernel frames, _[i] after inlined ones
	bool verbose = false;     // -v: address, symbol+offset, module, file:line
	bool fold_pid = false;    // -E: comm-PID[@CONTAINER] as the root frame of folded stacks
	// pprof's sample type off the CPU: a server may want its own name for it.
	std::string off_cpu_type = "off_cpu";
	// OTLP's resource: its service.name ("" -> the host name), and OTEL_RESOURCE_ATTRIBUTES'
	// pairs, which win over what profile sets itself but service.name.
	std::string service_name{};
	std::vector<std::pair<std::string, std::string>> resource_attributes{};

	bool operator==(const ReportOptions &) const = default;
};

// Each is a row of report/formats.cpp's table.
enum class ReportFormat { Stacks, Folded, Svg, Pprof, Otlp };

// A report as bytes, and the format that reads them: what a push carries.
struct RenderedProfile {
	ReportFormat format = ReportFormat::Stacks;
	std::string bytes;
};

ReportDetail report_detail(ReportFormat format, const ReportOptions &options);

// -E's root frame, comm-PID, names the container of a process in one: "@" and the first
// 12 characters of its id, as docker ps shows it.
inline void append_container(std::string &root, const Sample &sample)
{
	if (sample.container.empty())
		return;
	root += '@';
	root.append(sample.container, 0, 12);
}

// BCC's multi-line layout: kernel frames then user frames, leaf first, hottest stack last.
void write_stacks(std::ostream &out, const Profile &profile, const ReportOptions &options);

// One line per stack, root first: comm;frame;...;frame COUNT. Hottest stack last.
void write_folded(std::ostream &out, const Profile &profile, const ReportOptions &options);

// One self-contained interactive SVG flame graph.
void write_svg(std::ostream &out, const Profile &profile, const ReportOptions &options);

// A gzipped pprof profile.proto message: sample types samples/count and cpu/nanoseconds,
// or with --off-cpu one, off_cpu_type/nanoseconds (a server may want its own name for it).
// Throws RunError when zlib cannot compress (it has no memory).
void write_pprof(std::ostream &out, const Profile &profile, std::string_view off_cpu_type = "off_cpu");

// An OTLP ExportProfilesServiceRequest (opentelemetry-proto's profiles/v1development), not
// compressed: one resource per container (and, on a run of one process, the process), one
// profile of samples/count (cpu/nanoseconds its period), or with --off-cpu of
// off_cpu/nanoseconds, in each.
void write_otlp(std::ostream &out, const Profile &profile, const ReportOptions &options);

// The writers below, as report/formats.cpp's table names them.
void write_report(std::ostream &out, ReportFormat format, const Profile &profile,
		  const ReportOptions &options);
RenderedProfile render_report(ReportFormat format, const Profile &profile, const ReportOptions &options);

// A --format name: "stacks", "folded", "svg", "pprof", "otlp"; nothing for any other name.
std::optional<ReportFormat> format_from_name(std::string_view name);

// By -o's extension: .svg, .pb.gz, .otlp, .folded, .txt; nothing for any other.
std::optional<ReportFormat> format_from_path(std::string_view path);
