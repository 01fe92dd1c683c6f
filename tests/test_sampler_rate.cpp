// tests/test_sampler_rate.cpp: the rate lowered to what the kernel takes and the machine can
// carry (sampler/rate.h), and the real ./profile at rates it cannot, beside a process that
// measures how late its wake-ups come.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "sampler/rate.h"
#include "tests/support.h"

TEST_SUITE("unit") {

TEST_CASE("a rate within the kernel's limits is left as asked, with no note")
{
	const RateLimits limits{100000, 25};
	for (SampleRate asked : {SampleRate{49, 0}, SampleRate{999, 0}, SampleRate{100000, 0}, SampleRate{0, 10000000},
				 SampleRate{0, 10000}}) {
		const RateDecision d = limit_rate(asked, limits);
		CHECK(d.rate == asked);
		CHECK(d.note.empty());
	}
}

TEST_CASE("-f above kernel.perf_event_max_sample_rate is lowered to it, and the note says why")
{
	const RateDecision d = limit_rate({1000000, 0}, {100000, 25});
	CHECK(d.rate == SampleRate{100000, 0});
	CHECK(contains(d.note, "-f 1000000"));
	CHECK(contains(d.note, "kernel.perf_event_max_sample_rate"));
	CHECK(contains(d.note, "100000 Hz"));
	// A lower limit, as the kernel sets when its interrupts took too long.
	CHECK(limit_rate({5000, 0}, {3000, 25}).rate == SampleRate{3000, 0});
}

TEST_CASE("a small -c is raised to the period of the kernel's limit")
{
	const RateDecision d = limit_rate({0, 10}, {100000, 25});
	CHECK(d.rate == SampleRate{0, 10000});
	CHECK(contains(d.note, "-c 10"));
	CHECK(limit_rate({0, 1}, {3000, 25}).rate == SampleRate{0, 333334});
}

TEST_CASE("above 100000 Hz the cpu-clock timer's 10 µs is the limit, whatever the sysctl allows")
{
	const RateDecision d = limit_rate({500000, 0}, {1000000, 25});
	CHECK(d.rate == SampleRate{100000, 0});
	CHECK(contains(d.note, "10 µs"));
	// An unknown limit (no /proc/sys) leaves the timer's.
	CHECK(limit_rate({0, 100}, {0, -1}).rate == SampleRate{0, 10000});
}

TEST_CASE("the budget is perf_cpu_time_max_percent's share, 25 % when it is off or unknown, 50 % at most")
{
	CHECK(budget_percent({100000, 25}) == 25);
	CHECK(budget_percent({100000, 10}) == 10);
	CHECK(budget_percent({100000, 0}) == 25);
	CHECK(budget_percent({100000, -1}) == 25);
	CHECK(budget_percent({100000, 90}) == 50);
	CHECK(budget_percent({100000, 100}) == 50);
}

TEST_CASE("a rate whose samples would take more than the budget is lowered to 80 % of what fits")
{
	// 15 µs a sample: 25 % of a CPU fits 16,666 a second; 80 % of that on two digits.
	auto fit = fit_to_cost({100000, 0}, 15000, 25);
	REQUIRE(fit);
	CHECK(fit->rate == SampleRate{13000, 0});
	CHECK(contains(fit->note, "150 % of each CPU"));
	CHECK(contains(fit->note, "15.0 µs"));
	CHECK(contains(fit->note, "lowered to 13000 Hz"));
	// By period: the period of 13,000 a second, rounded up.
	fit = fit_to_cost({0, 10000}, 15000, 25);
	REQUIRE(fit);
	CHECK(fit->rate == SampleRate{0, 76924});
	// A smaller budget lowers further.
	fit = fit_to_cost({100000, 0}, 15000, 10);
	REQUIRE(fit);
	CHECK(fit->rate == SampleRate{5300, 0});
}

TEST_CASE("ordinary rates fit: nothing is lowered")
{
	CHECK_FALSE(fit_to_cost({49, 0}, 50000, 25));
	CHECK_FALSE(fit_to_cost({999, 0}, 200000, 25));
	CHECK_FALSE(fit_to_cost({0, 10000000}, 200000, 25));
	// Unknown cost: nothing to judge by.
	CHECK_FALSE(fit_to_cost({100000, 0}, 0, 25));
	// Just over what fits, by less than the room left: lowered all the same.
	CHECK(fit_to_cost({17000, 0}, 15000, 25));
}

} // TEST_SUITE

TEST_SUITE("integration") {

namespace {

// A thread that sleeps 10 ms in a loop, as long as it lives, and keeps how much later than
// asked its worst wake-up came.
class LatencyProbe {
public:
	LatencyProbe()
		: thread_([this] {
			  while (!stop_) {
				  const double before = now();
				  usleep(10000);
				  const double late = now() - before - 0.010;
				  if (late > worst_)
					  worst_ = late;
			  }
		  })
	{
	}
	~LatencyProbe() { stop(); }
	double stop()
	{
		stop_ = true;
		if (thread_.joinable())
			thread_.join();
		return worst_;
	}

private:
	std::atomic<bool> stop_{false};
	std::atomic<double> worst_{0};
	std::thread thread_;
};

// Runs the profiler on the whole machine for 2 s with args, beside the probe, and checks
// the targets: it ends within 5 s of its duration, and no wake-up of the probe came more
// than 100 ms late. Returns its stderr.
std::string run_beside_probe(const std::vector<std::string> &args)
{
	std::vector<std::string> argv = args;
	argv.insert(argv.end(), {"--folded", "2"});
	LatencyProbe probe;
	const CommandResult run = profile(argv, 60);
	const double worst = probe.stop();
	INFO("profile ", args[0], " ", args.size() > 1 ? args[1] : "", ": ", run.err);
	CHECK(run.status == 0);
	CHECK(run.seconds < 2 + 5);
	CHECK(worst < 0.100);
	MESSAGE("profile ", args[0], args.size() > 1 ? " " + args[1] : "", ": ", run.seconds, " s, the probe's worst wake-up ",
		worst * 1000, " ms late");
	return run.err;
}

} // namespace

TEST_CASE("a rate the machine cannot carry is lowered, not obeyed: the run ends and the machine keeps running")
{
	require_root();
	// Both CPUs busy, as when the machine once froze for 8 minutes at -f 100000.
	Background busy0({workload("split"), "60"}, 0);
	Background busy1({workload("split"), "60"}, 1);
	const std::string over_limit = run_beside_probe({"-f", "1000000"});
	CHECK(contains(over_limit, "kernel.perf_event_max_sample_rate"));
	const std::string too_costly = run_beside_probe({"-f", "100000"});
	CHECK(contains(too_costly, "lowered to"));
	CHECK(contains(too_costly, "kernel.perf_cpu_time_max_percent"));
	const std::string small_count = run_beside_probe({"-c", "10"});
	CHECK(contains(small_count, "-c 10 is over"));
}

TEST_CASE("--off-cpu on a storm of context switches stays within its CPU budget and counts what it dropped")
{
	require_root();
	// Two pairs of threads that pass a byte through pipes as fast as they can: hundreds of
	// thousands of context switches a second on each CPU.
	Background storm({workload("pingpong"), "60"});
	usleep(300000);
	const std::string err = run_beside_probe({"--off-cpu", "--wakers"});
	// The last line counts what was lost, the budget among its causes when it ran out.
	const std::vector<std::string> lines = split_lines(err);
	REQUIRE_FALSE(lines.empty());
	CHECK(contains(lines.back(), "over the CPU budget"));
}

} // TEST_SUITE
