// report/delivery.h: where a run's reports go: one report at the end (stdout or -o), or,
// with --interval, one per window: to stdout each opened by its window line, to files
// named by -o's strftime fields, and to a Pyroscope, Parca or OTLP server with --push.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "report/model.h"
#include "report/report.h"

// The samples of one window (or of the whole run), as the kernel accounted for them.
struct WindowAccount {
	uint64_t taken = 0, stored = 0, lost = 0;
};

// Where the reports go and what they show, as the command line said.
struct Delivery {
	ReportFormat format = ReportFormat::Stacks;
	ReportOptions report;
	std::string output_path; // -o: a file; with windows, a pattern of strftime fields
	bool push = false;       // --push: every window goes to a server too
};

class Reports {
public:
	Reports(Delivery delivery, std::string host);
	~Reports();
	Reports(const Reports &) = delete;
	Reports &operator=(const Reports &) = delete;

	// What the reports show of each sample (the union of every destination's needs).
	ReportDetail detail() const;

	// The report of the whole run, as before --interval: to -o's file, else stdout; a file
	// that cannot be written sends the report to stdout instead. The exit status so far.
	int single(const Profile &profile);

	// One window of --interval ended at end_ns (CLOCK_REALTIME; it began at
	// profile.start_time_ns): its report goes to each destination.
	void window(const Profile &profile, const WindowAccount &account, int64_t end_ns);

	// The CPU this thread took to render each window's reports (the push's and -o's), for
	// PROFILE_DEBUG: what a format costs an agent.
	struct RenderTime {
		uint64_t windows = 0;
		double ms_sum = 0, ms_max = 0;
	};
	const RenderTime &render_time() const { return render_time_; }

	// The exit status so far: 1 when a report could not be written.
	int status() const { return status_; }

	// stdout's reader has gone (| head): the run ends.
	bool reader_gone() const { return reader_gone_; }

	// Where pushed windows go (set by the run when --push is given): called with the
	// window's report in the format the server takes, its start and end (CLOCK_REALTIME)
	// and its sample count. options: how the server wants it (off the CPU, a pprof's sample
	// type named as the server names it; OTLP's service name and resource).
	using PushFn = std::function<void(RenderedProfile profile, int64_t start_ns, int64_t end_ns, uint64_t samples)>;
	void set_push(PushFn push, ReportFormat format, ReportOptions options)
	{
		push_ = std::move(push);
		push_format_ = format;
		push_options_ = std::move(options);
	}

private:
	// Writes a report to path, saying so on stderr with `what`; false when it failed
	// (said in one line).
	bool write_file(const Profile &profile, const std::string &path, const std::string &what);
	// Whether the format is binary and stdout a terminal, where it must not go.
	bool binary_on_terminal() const;
	// Writes a report to stdout, after `opening` (a line) when given.
	void write_stdout(const Profile &profile, const std::string &opening);

	Delivery delivery_;
	std::string host_;
	PushFn push_;
	ReportFormat push_format_ = ReportFormat::Pprof;
	ReportOptions push_options_;
	std::set<std::string> window_paths_; // every window's file this run has written or tried
	int status_ = 0;
	bool reader_gone_ = false;
	RenderTime render_time_;
};
