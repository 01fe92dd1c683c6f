// profile.cpp: parse the command line, plan the run against this machine, run it
// (run/run.h).
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "base/diagnostics.h"
#include "cli/options.h"
#include "cli/run_plan.h"
#include "run/run.h"
#include "syms/debuginfod.h"

int main(int argc, char **argv)
{
	std::ios::sync_with_stdio(false);
	Result<Options> parsed = parse_options(argc, argv);
	if (!parsed.ok()) {
		diagnostics::say("%s (see profile --help)", parsed.error().c_str());
		return 2;
	}
	const Options &options = *parsed;
	if (options.help) {
		std::cout << help_text();
		return 0;
	}
	if (options.version) {
		std::cout << "profile " << PROFILE_VERSION << '\n';
		return 0;
	}
	Result<RunPlan> plan = check_against_machine(options);
	if (!plan.ok()) {
		diagnostics::say("%s", plan.error().c_str());
		return 2;
	}
	for (const std::string &note : plan->notes)
		diagnostics::say("%s", note.c_str());
	int status;
	try {
		status = run(options, *plan);
	} catch (const RunError &e) {
		diagnostics::say("%s", e.what());
		status = 1;
	}
	// A fetch given up at --debuginfod-timeout may still be inside libcurl: no exit
	// handler of its libraries runs beneath it.
	if (debuginfod_fetches_running()) {
		std::cout.flush();
		fflush(nullptr);
		_exit(status);
	}
	return status;
}
