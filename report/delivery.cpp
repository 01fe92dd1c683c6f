// report/delivery.cpp: where a run's reports go.
#include "report/delivery.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "report/formats.h"
#include "report/output_file.h"
#include "report/window.h"

Reports::Reports(Delivery delivery, std::string host) : delivery_(std::move(delivery)), host_(std::move(host)) {}

Reports::~Reports() = default;

ReportDetail Reports::detail() const
{
	ReportDetail detail = report_detail(delivery_.format, delivery_.report);
	if (delivery_.push) {
		const ReportDetail pushed = report_detail(push_format_, {});
		detail.pids |= pushed.pids;
		detail.addresses |= pushed.addresses;
	}
	return detail;
}

bool Reports::binary_on_terminal() const
{
	// A binary format is no text for a terminal: a report that misses its file goes nowhere.
	return report_format(delivery_.format).binary && isatty(STDOUT_FILENO);
}

bool Reports::write_file(const Profile &profile, const std::string &path, const std::string &what)
{
	const Status written = write_output_file(path, [&](std::ostream &out) {
		write_report(out, delivery_.format, profile, delivery_.report);
	});
	if (written.ok()) {
		diagnostics::say("wrote %s (%s)", path.c_str(), what.c_str());
		return true;
	}
	status_ = 1;
	if (binary_on_terminal()) {
		diagnostics::say("%s", written.error().c_str());
		return false;
	}
	// It was writable at the start and failed since (a full disk): what was collected goes
	// to stdout rather than nowhere.
	diagnostics::say("%s; the report goes to stdout instead", written.error().c_str());
	return false;
}

void Reports::write_stdout(const Profile &profile, const std::string &opening)
{
	if (reader_gone_)
		return;
	std::cout.flush(); // the header line, when it went there
	int error = write_to_fd(STDOUT_FILENO, [&](std::ostream &out) {
		if (!opening.empty())
			out << opening << '\n';
		write_report(out, delivery_.format, profile, delivery_.report);
	});
	// A reader that went away (| head) ends the run quietly.
	if (error == EPIPE) {
		reader_gone_ = true;
	} else if (error) {
		diagnostics::say("cannot write the report: %s", strerror(error));
		status_ = 1;
	}
}

int Reports::single(const Profile &profile)
{
	const bool to_file = !delivery_.output_path.empty();
	char what[96];
	const uint64_t total = shown_count(profile, profile.total());
	std::snprintf(what, sizeof(what), "%" PRIu64 " %s, %zu stack%s", total,
		      profile.off_cpu ? "µs off-CPU" : total == 1 ? "sample" : "samples", profile.samples.size(),
		      profile.samples.size() == 1 ? "" : "s");
	if (!to_file || !write_file(profile, delivery_.output_path, what))
		if (!to_file || !binary_on_terminal())
			write_stdout(profile, "");
	return status_;
}

void Reports::window(const Profile &profile, const WindowAccount &account, int64_t end_ns)
{
	const std::string opening = window_line(profile.start_time_ns, end_ns,
						window_account(account.taken, account.stored, account.lost, profile.off_cpu));
	const int64_t cpu_before = clocks::thread_cpu_ns();
	if (push_) {
		push_(render_report(push_format_, profile, push_options_), profile.start_time_ns, end_ns, profile.total());
	}
	if (!delivery_.output_path.empty()) {
		const std::string path =
			unused_window_path(expand_time_fields(delivery_.output_path, profile.start_time_ns), window_paths_);
		window_paths_.insert(path);
		char stacks[48];
		std::snprintf(stacks, sizeof(stacks), ", %zu stack%s", profile.samples.size(),
			      profile.samples.size() == 1 ? "" : "s");
		const std::string what = "window " + rfc3339_time(profile.start_time_ns) + " " + rfc3339_time(end_ns) +
					 ": " + window_account(account.taken, account.stored, account.lost, profile.off_cpu) + stacks;
		if (!write_file(profile, path, what) && !binary_on_terminal())
			write_stdout(profile, opening);
	} else if (!delivery_.push) {
		write_stdout(profile, opening);
	}
	const double ms = double(clocks::thread_cpu_ns() - cpu_before) / 1e6;
	render_time_.windows++;
	render_time_.ms_sum += ms;
	render_time_.ms_max = std::max(render_time_.ms_max, ms);
}
