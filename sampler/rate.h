// sampler/rate.h: how often a run may sample on this machine. Two limits, both of which
// lower the rate rather than refuse the run or obey it: what the kernel takes (its
// kernel.perf_event_max_sample_rate, and the cpu-clock timer, which fires at most every
// 10 µs), and what the machine can carry: the samples' own CPU time, kept within a share
// of each CPU (kernel.perf_cpu_time_max_percent, perf's 25 % by default). The same share is
// the kernel side's budget (sampler/budget.bpf.h), which drops what comes over it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

// The kernel's settings, as read from /proc/sys/kernel.
struct RateLimits {
	uint64_t max_sample_rate = 0;  // kernel.perf_event_max_sample_rate; 0: unknown
	int cpu_time_max_percent = -1; // kernel.perf_cpu_time_max_percent; -1: unknown
};
RateLimits read_rate_limits();

// The cpu-clock timer fires at most this often: the kernel rounds a shorter period up.
inline constexpr uint64_t kMinClockPeriodNs = 10000;

// A sampling rate: -f's frequency (Hz), or with frequency 0, -c's period (ns of CPU time).
struct SampleRate {
	uint64_t frequency = 0;
	uint64_t period = 0;

	// The CPU time between two samples on one CPU.
	uint64_t period_ns() const { return frequency ? 1000000000 / frequency : period; }
	// Samples a second on one CPU, at most (a period of 0 counts as 1 ns).
	double per_second() const { return frequency ? double(frequency) : 1e9 / double(period ? period : 1); }
	// "-f 49" or "-c 10000000", as the command line says it.
	std::string flag() const;
	bool operator==(const SampleRate &) const = default;
};

// A rate as it is to be, and the line for stderr when that is not as asked (empty when it is).
struct RateDecision {
	SampleRate rate;
	std::string note;
};

// The share of each CPU, in percent, that the kernel side may take: the kernel's
// perf_cpu_time_max_percent, 25 (perf's default) where that is unknown or 0 (no limit),
// and never more than 50: a profiler must leave its host most of every CPU.
uint32_t budget_percent(const RateLimits &limits);

// `asked` lowered to what the kernel takes.
RateDecision limit_rate(SampleRate asked, const RateLimits &limits);

// The rate lowered, once a sample is measured to cost `cost_ns` of a CPU (its interrupt's and
// its program's time), so that samples
// take no more than `percent` of each CPU (with room to spare: 80 % of that, on two
// significant digits); nothing when `now` already fits.
std::optional<RateDecision> fit_to_cost(SampleRate now, double cost_ns, uint32_t percent);

// What one cpu-clock interrupt costs a CPU here, in ns, before any program runs in it: the
// timer's interrupt, its reprogramming (in a VM, exits to the hypervisor: 15 to 20 µs each
// were measured on a 2-CPU VM) and perf's handling. Measured on `cpu` by a thread spinning
// there at real-time priority, in turns without and with an event at 10 kHz and nothing
// attached, 5 ms at a time (about 110 ms in all); nothing when it cannot be (no real-time
// priority, no event).
std::optional<double> measure_interrupt_cost(int cpu);

// What a run assumes an interrupt costs when it cannot measure it: the worst measured.
inline constexpr double kAssumedInterruptCostNs = 20000;

// The rates at and below which the kernel side keeps no budget: a CPU's window of 10 ms then
// holds about ten samples, each charged at most a tenth of the budget (sampler/budget.bpf.h),
// so it cannot run out, and the samples read no clock for it. --off-cpu always keeps one.
inline constexpr uint64_t kBudgetAbove = 1000;

// The rates at and below which measure_interrupt_cost is not needed: at most a few percent
// of a CPU even where an interrupt costs 20 µs.
inline constexpr uint64_t kRateMeasuredAbove = 2000;
