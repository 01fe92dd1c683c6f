// sampler/kernel_checks.h: what the machine offers the sampler: its online CPUs, the
// privileges and kernel features loading needs, and its sysctls.
#pragma once

#include <string_view>
#include <vector>

#include "base/error.h"

// "0-3,5" (the format of /sys/devices/system/cpu/online) -> {0,1,2,3,5}; empty if malformed.
std::vector<int> parse_cpu_list(std::string_view text);
std::vector<int> online_cpus();

// Checks made before anything is loaded, each throwing RunError with what to do.
void check_privileges();
void check_kernel_support(const char *btf_path = "/sys/kernel/btf/vmlinux");
// Ok, or what the table unwinder needs that this kernel lacks.
Status unwinder_support();
// Ok, or what --off-cpu needs that this kernel lacks (BTF, the sched_switch tracepoint,
// task storage, the table unwinder).
Status off_cpu_support(const char *btf_path = "/sys/kernel/btf/vmlinux");

// A number from a /proc/sys file (e.g. /proc/sys/kernel/perf_event_max_stack); fallback
// when it cannot be read.
long read_sysctl(const char *path, long fallback);
