// proc/kallsyms.h: kernel function names from /proc/kallsyms, looked up by address.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// Where a text symbol starts, and where it ends as far as kallsyms tells (it has no sizes):
// the next text symbol's address above it. Zeros: not found, or hidden (kptr_restrict).
struct KernelTextRange {
	uint64_t start = 0, end = 0;
};

// The range of each of `names` in kallsyms text, in their order: for the few symbols a BPF
// program must know before it loads (without libbpf's typeless __ksym externs, which make
// every load parse all of /proc/kallsyms).
std::vector<KernelTextRange> kernel_text_ranges(std::string_view text, std::span<const std::string_view> names);

class KernelSymbols {
public:
	struct Match {
		std::string_view name;
		uint64_t offset = 0;        // address - symbol start
		std::string_view module;    // "" for vmlinux, "ext4", "bpf" for BPF programs
		uint64_t module_offset = 0; // address - the module's lowest symbol (raw address for vmlinux)
	};

	// Parses kallsyms text: "ADDR TYPE NAME[\t[MODULE]]" lines. Keeps text symbols
	// (t, T, w, W), which include the BPF programs ("bpf_prog_<tag>_<name> [bpf]").
	static KernelSymbols parse(std::string_view text);
	// Reads and parses a kallsyms file; empty when it cannot be read.
	static KernelSymbols load(const std::string &path);

	// The symbol covering address: the nearest one at or below it. kallsyms has no sizes,
	// so nothing says where the last symbol ends: an address beyond it, or below the
	// first, is unknown.
	std::optional<Match> find(uint64_t address) const;

	// The address past which no core kernel (vmlinux) symbol lies: the last one's.
	uint64_t core_end() const { return core_end_; }
	// Every symbol kept, in address order: fn(address, name, module), module "" for vmlinux.
	template <typename Fn>
	void for_each(Fn &&fn) const
	{
		for (const Symbol &s : symbols_)
			fn(s.address, std::string_view(names_).substr(s.name_offset, s.name_size),
			   std::string_view(modules_[s.module].name));
	}

	size_t size() const { return symbols_.size(); }
	bool empty() const { return symbols_.empty(); }

private:
	class Builder;
	struct Symbol {
		uint64_t address;
		uint32_t name_offset; // into names_
		uint16_t name_size;
		uint16_t module;      // index into modules_; 0 is vmlinux
	};
	struct Module {
		std::string name;
		uint64_t lowest = UINT64_MAX;
	};

	std::vector<Symbol> symbols_; // sorted by address, one per address
	std::string names_;           // every kept name, back to back
	std::vector<Module> modules_;
	uint64_t core_end_ = 0;
};
