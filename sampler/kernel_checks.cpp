// sampler/kernel_checks.cpp: what the machine offers the sampler: its online CPUs, the
// privileges and kernel features loading needs, and its sysctls.
#include "sampler/kernel_checks.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "base/diagnostics.h"
#include "base/fd.h"

namespace {

// Small /proc and /sys files, opened close-on-exec like every fd the profiler holds.
std::string read_file(const char *path)
{
	std::string text;
	read_whole_file(path, text);
	return text;
}

} // namespace

long read_sysctl(const char *path, long fallback)
{
	std::string text = read_file(path);
	return text.empty() ? fallback : std::strtol(text.c_str(), nullptr, 10);
}

std::vector<int> parse_cpu_list(std::string_view text)
{
	std::vector<int> cpus;
	while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
		text.remove_suffix(1);
	while (!text.empty()) {
		size_t comma = text.find(',');
		std::string_view range = text.substr(0, comma);
		size_t dash = range.find('-');
		int first = 0, last = 0;
		auto number = [](std::string_view s, int &out) {
			if (s.empty() || s.size() > 6)
				return false;
			out = 0;
			for (char c : s) {
				if (c < '0' || c > '9')
					return false;
				out = out * 10 + (c - '0');
			}
			return true;
		};
		if (!number(range.substr(0, dash), first))
			return {};
		last = first;
		if (dash != std::string_view::npos && !number(range.substr(dash + 1), last))
			return {};
		if (last < first)
			return {};
		for (int cpu = first; cpu <= last; cpu++)
			cpus.push_back(cpu);
		if (comma == std::string_view::npos)
			break;
		text.remove_prefix(comma + 1);
	}
	return cpus;
}

std::vector<int> online_cpus()
{
	return parse_cpu_list(read_file("/sys/devices/system/cpu/online"));
}

void check_privileges()
{
	// The effective capabilities, for root too: root under a reduced bounding set (a
	// systemd unit's CapabilityBoundingSet=) lacks what it would be refused. Before
	// Linux 5.8 there is no CAP_BPF or CAP_PERFMON: CAP_SYS_ADMIN stands for both.
	__user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
	__user_cap_data_struct data[2]{};
	if (syscall(SYS_capget, &header, data) != 0)
		return; // cannot tell: let the kernel say
	auto has = [&](int cap) { return data[cap / 32].effective & (1u << (cap % 32)); };
	if ((has(CAP_BPF) && has(CAP_PERFMON)) || has(CAP_SYS_ADMIN))
		return;
	throw RunError("needs root or CAP_BPF+CAP_PERFMON to load the BPF program (try: sudo ./profile)");
}

Status unwinder_support()
{
#if defined(__x86_64__)
	struct Need {
		bpf_func_id helper;
		const char *what;
	};
	for (Need need : {Need{BPF_FUNC_loop, "bpf_loop (Linux 5.17)"},
			  Need{BPF_FUNC_task_pt_regs, "bpf_task_pt_regs (Linux 5.15)"},
			  Need{BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf (Linux 5.11)"},
			  Need{BPF_FUNC_get_stack, "bpf_get_stack (Linux 4.18)"}})
		if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, need.helper, nullptr) != 1)
			return Error(std::string("the kernel has no ") + need.what + " for perf_event programs");
	return {};
#else
	return Error("unwinding from tables is written for x86-64 only");
#endif
}

Status off_cpu_support(const char *btf_path)
{
	if (access(btf_path, R_OK) != 0)
		return Error(std::string("--off-cpu needs a kernel with BTF (") + btf_path + " is missing)");
	btf *vmlinux = btf__parse(btf_path, nullptr);
	const bool has_switch = vmlinux && btf__find_by_name_kind(vmlinux, "btf_trace_sched_switch", BTF_KIND_TYPEDEF) > 0;
	btf__free(vmlinux);
	if (!has_switch)
		return Error("--off-cpu needs the sched_switch tracepoint, which this kernel's BTF does not have");
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, nullptr) != 1)
		return Error("--off-cpu needs task storage maps (Linux 5.11), which this kernel does not have");
	if (Status unwinder = unwinder_support(); !unwinder.ok())
		return Error("--off-cpu walks user stacks from unwind tables: " + unwinder.error());
	return {};
}

void check_kernel_support(const char *btf_path)
{
	if (access(btf_path, R_OK) != 0)
		throw RunError(std::string("this kernel has no BTF (") + btf_path + " is missing): "
			       "it needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	// bpf(2) with a bad command says ENOSYS only where BPF itself is missing.
	if (syscall(SYS_bpf, -1, nullptr, 0) < 0 && errno == ENOSYS)
		throw RunError("this kernel has no BPF support (CONFIG_BPF_SYSCALL is off)");
}
