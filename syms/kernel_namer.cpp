// syms/kernel_namer.cpp: kernel frames named from BPF programs' records and kallsyms.
#include "syms/kernel_namer.h"

#include "syms/kallsyms_cache.h"
#include "proc/process_history.h"

void KernelNamer::load()
{
	std::call_once(loaded_, [this] {
		KernelSymbolSource source = load_kernel_symbols(options_.kallsyms_path, options_.kernel_cache_dir,
								options_.kernel_cache_dir.empty() ? "" : kernel_identity());
		kernel_ = std::move(source.symbols);
		complete_ = source.complete;
		stats_.kernel_symbols = kernel_.size();
	});
}

const KernelSymbolRecord *KernelNamer::loaded_symbol(const ProcessHistory *history, uint64_t address,
						     bool return_address, uint64_t time_ns)
{
	const uint64_t back = return_address && address ? 1 : 0;
	return history ? history->kernel_symbol(address - back, time_ns) : nullptr;
}

Frame KernelNamer::frame(uint64_t address, bool return_address, const KernelSymbolRecord *record)
{
	load();
	Frame frame;
	frame.kind = FrameKind::Kernel;
	frame.address = address;
	const uint64_t back = return_address && address ? 1 : 0;
	// A BPF program loaded (or unloaded) while sampling is not in kallsyms as read at the
	// start, and kallsyms has no sizes: an exact record of the side band wins.
	if (record) {
		frame.name = record->name;
		frame.symbol_offset = address - record->start;
		frame.module = record->bpf || record->name.starts_with("bpf_") ? "bpf" : "";
		frame.module_offset = frame.module.empty() ? address : address - record->start;
		return frame;
	}
	// The cached core kernel does not hold modules or BPF programs loaded before the run:
	// an address past it is looked up in kallsyms itself, read then, once.
	constexpr uint64_t kCoreSlack = 16 << 20;
	if (!complete_ && address - back > kernel_.core_end() + kCoreSlack) {
		kernel_ = KernelSymbols::load(options_.kallsyms_path);
		complete_ = true;
		stats_.kernel_symbols = kernel_.size();
		stats_.kallsyms_reread = true;
	}
	if (auto match = kernel_.find(address - back)) {
		frame.name = match->name;
		frame.symbol_offset = match->offset + back;
		frame.module = match->module;
		frame.module_offset = match->module_offset + back;
	}
	return frame;
}
