// syms/kallsyms_cache.h: the core kernel's symbols, read from /proc/kallsyms once per boot.
#pragma once

#include <string>

#include "proc/kallsyms.h"

// Reading /proc/kallsyms costs the kernel about 50 ms of CPU (it formats 120,000 lines),
// most of a short run's own CPU. The core kernel's symbols cannot change until the next
// boot, so a run as root keeps them in CACHE_DIR/kallsyms (a tmpfs under /run, gone at
// reboot) for the runs after it. Modules and BPF programs come and go: they are never
// cached, and an address outside the core kernel asks for /proc/kallsyms itself.
struct KernelSymbolSource {
	KernelSymbols symbols;
	// From kallsyms_path itself: everything it held. Otherwise the core kernel only.
	bool complete = true;
};

// What the cache is valid for: the boot (random/boot_id) and the kernel release. Empty when
// either cannot be read, and then nothing is cached.
std::string kernel_identity(const std::string &proc_root = "/proc");

// The cached core symbols when cache_dir holds them for `identity`; else kallsyms_path read
// whole, and the cache written for the next run. An empty cache_dir or identity: no cache.
// The directory must be ours and closed to others (mode 0700), or it is not used.
KernelSymbolSource load_kernel_symbols(const std::string &kallsyms_path, const std::string &cache_dir,
				       const std::string &identity);
