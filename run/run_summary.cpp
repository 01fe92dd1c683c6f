// run/run_summary.cpp: the lines stderr ends a run with: pushes, windows, where the time
// went (PROFILE_DEBUG), why nothing was sampled, and what was lost.
#include "run/run_summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdlib>

#include "base/clock.h"
#include "base/diagnostics.h"
#include "report/formats.h"
#include "run/account.h"
#include "report/window.h"

void RunSummary::last_window(const WindowCutter &windows)
{
	entries_ = windows.entry_count();
	stacks_ = windows.stack_count();
	objects_ = windows.object_count();
}

void RunSummary::unwinding(const Session &session, const WindowCutter &windows)
{
	if (session.unwinding())
		report_unwinding(windows.account(), session.tables());
}

void RunSummary::print(Session &session, const WindowCutter &windows, const Pusher *pusher)
{
	const RawProfile &account = windows.account();
	if (pusher) {
		const Pusher::Stats push = pusher->stats();
		diagnostics::say("push: %" PRIu64 " window%s sent to %s (%" PRIu64 " request%s, %" PRIu64
				" failed, %" PRIu64 " window%s dropped, %" PRIu64 " of them refused); a request took %.1f ms "
				"on average, %.1f ms at most",
			push.sent, push.sent == 1 ? "" : "s", url_for_humans(plan_.push ? plan_.push->url : options_.push_url).c_str(), push.attempts,
			push.attempts == 1 ? "" : "s", push.failures, push.dropped, push.dropped == 1 ? "" : "s",
			push.refused, push.attempts ? push.total_ms / double(push.attempts) : 0.0, push.max_ms);
	}
	if (options_.interval_s)
		diagnostics::say("%" PRIu64 " window%s: %s", windows.closed(), windows.closed() == 1 ? "" : "s",
			window_account(account.taken, account.stored, lost_samples(account.totals), options_.off_cpu).c_str());
	if (getenv("PROFILE_DEBUG")) {
		after_.mark("report");
		diagnostics::say("before sampling: %s; kernel symbols' thread CPU %.1f ms%s",
			startup_.summary().c_str(), session.kernel_symbols_cpu_ms(),
			session.symbolizer().stats().kallsyms_reread ? " (the cache did not hold every address: read again)"
								     : "");
		diagnostics::say("after sampling: %s; %zu keys, %zu stacks, %zu objects, %" PRIu64 " drains, "
				"%zu processes followed; whole run's CPU %.1f ms",
			after_.summary().c_str(), entries_, stacks_, objects_,
			session.sampler().drains(), session.history().process_count(),
			clocks::process_cpu_ns() / 1e6);
		if (windows.fetches_debug_files())
			diagnostics::say("debuginfod: %zu debug files asked for, %zu used; fetched in %.1f ms",
				windows.fetched().asked, windows.fetched().used, windows.fetched().wall_ms);
		if (options_.interval_s) {
			diagnostics::say("windows: %" PRIu64 " closed, CPU to name and write one %.1f ms on average, "
					"%.1f ms at most",
				windows.closed(), windows.cpu_ms_sum() / double(std::max<uint64_t>(windows.closed(), 1)),
				windows.cpu_ms_max());
			const Reports::RenderTime &render = windows.render_time();
			diagnostics::say("reports: of which rendering a window's (%s%s%s) %.1f ms on average, %.1f ms at most",
				options_.output_path.empty() ? "" : report_format(options_.format).name,
				!options_.output_path.empty() && plan_.push ? ", " : "",
				plan_.push ? push_backend(plan_.push->format)->name : "",
				render.ms_sum / double(std::max<uint64_t>(render.windows, 1)), render.ms_max);
			const SymbolizerStats names = session.symbolizer().stats();
			diagnostics::say("named user addresses: %zu from what windows kept, %zu from their files; "
					"%zu kept (%.1f KiB of %.1f), %zu dropped for room, %zu as no window of the last %zu named them; "
					"%zu files parsed, %zu kept (%.1f KiB), "
					"DWARF read again %zu times (%zu from %zu decompressed copies, %.1f KiB of %.1f)",
				names.named_from_kept, names.named_from_file, names.named_kept, names.named_kept_bytes / 1024.0,
				kKeptNamedBytes / 1024.0, names.named_dropped, names.named_aged, kKeptNamedWindows,
				names.elf_files_parsed, names.files_kept,
				names.file_bytes_kept / 1024.0, names.dwarf_read_again, names.dwarf_read_from_copy,
				names.decompressed_copies, names.decompressed_bytes / 1024.0, kKeptDecompressedBytes / 1024.0);
		}
		if (session.unwinding()) {
			const Unwinder::Stats &tables = session.tables();
			diagnostics::say("unwind tables: %u asked for, %u in the kernel (%u from the cache, %" PRIu64
					" rows of %u), %u without CFI, %u without room, %u unfinished; built in %.1f ms "
					"(CPU %.1f); mappings of %u processes sent, %u mappings left out",
				tables.objects, tables.ready, tables.from_cache, tables.rows, tables.row_capacity,
				tables.no_table, tables.no_room, tables.not_finished, tables.build_wall_ms,
				tables.build_cpu_ms, tables.processes, tables.dropped_mappings);
			diagnostics::say("walks that waited for tables: %llu for the process's mappings, %llu"
					" for a file's object, %llu for a table being built; %llu areas learned by walks;"
					" %llu user stacks of threads leaving the CPU taken again with no walk",
				account.totals.waited_process, account.totals.waited_file, account.totals.waited_building,
				account.totals.areas_learned, account.totals.unwound_again);
		}
		if (const Sampler::Budget budget = session.sampler().budget(); budget.kept)
			diagnostics::say("kernel side: %" PRIu64 " runs, %.2f µs each on average; the budget (%u %% of "
					"each CPU) spent in %" PRIu64 " windows of 10 ms",
				budget.runs, budget.runs ? double(budget.ns) / double(budget.runs) / 1000 : 0.0,
				plan_.sampler.budget_percent, budget.exhausted);
		if (const Runtimes *runtimes = session.runtimes())
			for (const std::string &line : runtimes->stats())
				diagnostics::say("%s", line.c_str());
	}
	if (!options_.interval_s)
		explain_empty(windows.last(), account, options_, session.targets());
	const Sampler::Budget budget = session.sampler().budget();
	if (budget.wakeups_dropped)
		diagnostics::say("%" PRIu64 " wake-up%s over the CPU budget: %s times off the CPU counted without a "
				"waker", budget.wakeups_dropped, budget.wakeups_dropped == 1 ? "" : "s",
				budget.wakeups_dropped == 1 ? "its" : "their");
	report_losses(account, options_, plan_.sampler.budget_percent);
}
