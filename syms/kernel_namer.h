// syms/kernel_namer.h: kernel addresses named: from the BPF programs (and trampolines)
// the process history saw come and go, else from /proc/kallsyms, kept per boot
// (syms/kallsyms_cache.h) and read again whole when the cache lacks an address.
#pragma once

#include <cstdint>
#include <mutex>

#include "report/model.h"
#include "proc/kallsyms.h"
#include "syms/symbolizer_options.h"

class ProcessHistory;
struct KernelSymbolRecord;

class KernelNamer {
public:
	KernelNamer(const SymbolizerOptions &options, SymbolizerStats &stats) : options_(options), stats_(stats) {}

	// Reads and indexes the kernel symbols, once.
	void load();
	// The program of history that holds address at time_ns; null when kallsyms names it.
	static const KernelSymbolRecord *loaded_symbol(const ProcessHistory *history, uint64_t address,
						       bool return_address, uint64_t time_ns);
	// The frame of address, from `program` when there is one, else from kallsyms.
	Frame frame(uint64_t address, bool return_address, const KernelSymbolRecord *program);

private:
	const SymbolizerOptions &options_;
	SymbolizerStats &stats_;
	std::once_flag loaded_;
	KernelSymbols kernel_;
	bool complete_ = true; // false: the cached core kernel only
};
