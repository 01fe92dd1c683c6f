// tests/test_report_formats.cpp: the table of report formats (report/formats.cpp).
#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "report/formats.h"

TEST_SUITE("unit") {

TEST_CASE("report formats: every row's name and extensions name it, and no two rows share one")
{
	std::set<std::string_view> names, suffixes;
	for (const ReportFormatRow &row : report_formats()) {
		CAPTURE(row.name);
		CHECK(format_from_name(row.name) == row.format);
		CHECK(&report_format(row.format) == &row);
		CHECK(names.insert(row.name).second);
		CHECK(!row.suffixes.empty());
		for (std::string_view suffix : row.suffixes) {
			CHECK(format_from_path("/tmp/cpu" + std::string(suffix)) == row.format);
			CHECK(suffixes.insert(suffix).second);
		}
	}
}

TEST_CASE("report formats: the lists --help and the errors show")
{
	CHECK(report_format_names("|") == "stacks|folded|svg|pprof|otlp");
	CHECK(report_suffix_list(false) == "(.svg, .pb.gz, .folded, .txt, .otlp)");
	CHECK(report_suffix_list(true) ==
	      "(.svg flame graph, .pb.gz pprof, .folded, .txt multi-line stacks, .otlp OTLP profiles)");
}

TEST_CASE("report formats: pprof and OTLP alone are binary, and what each needs of the samples")
{
	for (const ReportFormatRow &row : report_formats())
		CHECK(row.binary == (row.format == ReportFormat::Pprof || row.format == ReportFormat::Otlp));
	auto detail = [](ReportFormat format, ReportOptions options) {
		const ReportDetail d = report_detail(format, options);
		return std::pair{d.pids, d.addresses};
	};
	const ReportOptions verbose{.verbose = true}, fold_pid{.fold_pid = true};
	CHECK(detail(ReportFormat::Stacks, {}) == std::pair{true, false});
	CHECK(detail(ReportFormat::Stacks, verbose) == std::pair{true, true});
	CHECK(detail(ReportFormat::Folded, {}) == std::pair{false, false});
	CHECK(detail(ReportFormat::Folded, fold_pid) == std::pair{true, false});
	CHECK(detail(ReportFormat::Svg, verbose) == std::pair{false, false});
	CHECK(detail(ReportFormat::Svg, fold_pid) == std::pair{true, false});
	CHECK(detail(ReportFormat::Pprof, {}) == std::pair{true, true});
	CHECK(detail(ReportFormat::Otlp, {}) == std::pair{true, true});
}

TEST_CASE("report formats: a rendered report is what its writer writes, with its format")
{
	Profile profile;
	for (const ReportFormatRow &row : report_formats()) {
		CAPTURE(row.name);
		std::ostringstream out;
		row.write(out, profile, {});
		const RenderedProfile rendered = render_report(row.format, profile, {});
		CHECK(rendered.format == row.format);
		if (!row.binary) // pprof's gzip may differ in its header's time: compare text only
			CHECK(rendered.bytes == out.str());
	}
}

} // TEST_SUITE
