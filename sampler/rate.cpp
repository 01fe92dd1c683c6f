// sampler/rate.cpp: the sampling rate lowered to what the kernel takes and what the machine
// can carry (sampler/rate.h).
#include "sampler/rate.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "base/clock.h"
#include "base/fd.h"
#include "sampler/kernel_checks.h"

namespace {

// The largest number of two significant digits at most `value` (7,931 -> 7,900), at least 1.
uint64_t round_down_2(double value)
{
	if (value < 1)
		return 1;
	double scale = 1;
	while (value / scale >= 100)
		scale *= 10;
	return std::max<uint64_t>(1, uint64_t(std::floor(value / scale) * scale));
}

std::string format(const char *pattern, double a, double b = 0, double c = 0)
{
	char text[160];
	std::snprintf(text, sizeof(text), pattern, a, b, c);
	return text;
}

// "100000 Hz" or "every 10000 ns of CPU time": a rate as the notes say it.
std::string said(const SampleRate &rate)
{
	return rate.frequency ? std::to_string(rate.frequency) + " Hz"
			      : "one sample every " + std::to_string(rate.period) + " ns of CPU time";
}

} // namespace

std::string SampleRate::flag() const
{
	return frequency ? "-f " + std::to_string(frequency) : "-c " + std::to_string(period);
}

RateLimits read_rate_limits()
{
	RateLimits limits;
	const long rate = read_sysctl("/proc/sys/kernel/perf_event_max_sample_rate", 0);
	limits.max_sample_rate = rate > 0 ? uint64_t(rate) : 0;
	limits.cpu_time_max_percent = int(read_sysctl("/proc/sys/kernel/perf_cpu_time_max_percent", -1));
	return limits;
}

uint32_t budget_percent(const RateLimits &limits)
{
	if (limits.cpu_time_max_percent <= 0 || limits.cpu_time_max_percent > 100)
		return 25;
	return uint32_t(std::min(limits.cpu_time_max_percent, 50));
}

RateDecision limit_rate(SampleRate asked, const RateLimits &limits)
{
	// The highest rate either limit lets through, and which one it is.
	uint64_t most = 1000000000 / kMinClockPeriodNs;
	std::string why = "the cpu-clock timer fires at most every 10 µs";
	if (limits.max_sample_rate && limits.max_sample_rate <= most) {
		most = limits.max_sample_rate;
		why = "this kernel's limit is " + std::to_string(most) +
		      " samples a second (kernel.perf_event_max_sample_rate)";
	}
	if (asked.per_second() <= double(most))
		return {asked, ""};
	SampleRate lowered = asked;
	if (asked.frequency)
		lowered.frequency = most;
	else
		lowered.period = (1000000000 + most - 1) / most;
	return {lowered, asked.flag() + " is over " + std::to_string(most) + " samples a second on each CPU, and " +
				 why + ": sampling at " + said(lowered)};
}

std::optional<RateDecision> fit_to_cost(SampleRate now, double cost_ns, uint32_t percent)
{
	if (cost_ns <= 0 || percent == 0)
		return std::nullopt;
	const double fits = double(percent) / 100 * 1e9 / cost_ns; // samples a second
	if (now.per_second() <= fits)
		return std::nullopt;
	const double taken = now.per_second() * cost_ns / 1e9 * 100; // percent of a CPU
	SampleRate lowered = now;
	const uint64_t rate = round_down_2(fits * 0.8);
	if (now.frequency)
		lowered.frequency = std::min(rate, now.frequency);
	else
		lowered.period = std::max(now.period, (1000000000 + rate - 1) / rate);
	if (lowered == now)
		return std::nullopt;
	return RateDecision{lowered, "sampling at " + said(now) +
					     format(" would take %.0f %% of each CPU (a sample takes %.1f µs of the CPU "
						    "here), over the ",
						    taken, cost_ns / 1000) +
					     std::to_string(percent) + " % profile allows itself: lowered to " + said(lowered) +
					     " (kernel.perf_cpu_time_max_percent; see man profile)"};
}

namespace {

// Spins on this thread for `ns` of wall time; the work done per ns.
double spin_rate(int64_t ns)
{
	volatile uint64_t sink = 0;
	uint64_t rounds = 0;
	const int64_t start = clocks::monotonic_ns();
	int64_t now = start;
	while (now - start < ns) {
		for (int i = 0; i < 256; i++)
			sink = sink + uint64_t(i);
		rounds++;
		now = clocks::monotonic_ns();
	}
	return double(rounds) / double(now - start);
}

} // namespace

std::optional<double> measure_interrupt_cost(int cpu)
{
	std::optional<double> cost;
	std::thread([&] {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
			return;
		// Real-time priority: no other task takes the CPU from the spinning, so what it
		// loses with the event on is the interrupts' (also where the kernel accounts
		// interrupt time apart from tasks' CPU time). Without it, nothing is measured.
		sched_param param{};
		param.sched_priority = 1;
		if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) != 0)
			return;
		perf_event_attr attr{};
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.sample_period = 100000; // 10 kHz
		attr.disabled = 1;
		UniqueFd event(int(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC)));
		if (!event)
			return;
		// In turns, eight times each: the machine's other load moves both alike. Spins of
		// 5 ms with 2 ms between: a thread at real-time priority holds the CPU from every
		// other task while it spins, and none of them should wait long for it.
		double without = 0, with = 0;
		for (int turn = 0; turn < 8; turn++) {
			without += spin_rate(5000000);
			usleep(2000);
			ioctl(event.get(), PERF_EVENT_IOC_ENABLE, 0);
			with += spin_rate(5000000);
			ioctl(event.get(), PERF_EVENT_IOC_DISABLE, 0);
			usleep(2000);
		}
		const double lost = without > 0 ? 1 - with / without : 0;
		cost = std::clamp(lost, 0.0, 1.0) * double(attr.sample_period);
	}).join();
	return cost;
}
