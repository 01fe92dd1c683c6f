// syms/kallsyms_cache.cpp: the core kernel's symbols, read from /proc/kallsyms once per boot.
#include "syms/kallsyms_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <utility>

#include "base/fd.h"

namespace {

constexpr const char *kHeader = "# profile: core kernel symbols of ";

std::string trimmed(std::string text)
{
	while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
		text.pop_back();
	return text;
}

// The cached text when the file is ours, private, and written for this identity.
bool read_cache(int dir_fd, const std::string &identity, std::string &text)
{
	UniqueFd fd(openat(dir_fd, "kallsyms", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	struct stat st;
	if (!ours_and_private(fd.get(), st) || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > (64 << 20))
		return false;
	text.resize(size_t(st.st_size));
	if (read_up_to(fd.get(), text.data(), text.size()) != text.size())
		return false;
	const std::string header = std::string(kHeader) + identity + "\n";
	return text.compare(0, header.size(), header) == 0;
}

// Written beside, then renamed: a reader sees the old cache or the whole new one.
void write_cache(int dir_fd, const std::string &identity, const KernelSymbols &symbols)
{
	std::string text = std::string(kHeader) + identity + "\n";
	text.reserve(symbols.size() * 40);
	char address[24];
	symbols.for_each([&](uint64_t start, std::string_view name, std::string_view module) {
		if (!module.empty()) // modules, BPF programs, trampolines: not the core kernel's
			return;
		std::snprintf(address, sizeof(address), "%016" PRIx64 " T ", start);
		text += address;
		text += name;
		text += '\n';
	});
	const std::string temp = "kallsyms." + std::to_string(getpid()) + ".tmp";
	UniqueFd fd(openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
	if (!fd)
		return;
	const bool ok = write_all(fd.get(), text);
	if (close(fd.release()) != 0 || !ok || renameat(dir_fd, temp.c_str(), dir_fd, "kallsyms") != 0)
		unlinkat(dir_fd, temp.c_str(), 0);
}

} // namespace

std::string kernel_identity(const std::string &proc_root)
{
	std::string boot, release;
	if (!read_whole_file((proc_root + "/sys/kernel/random/boot_id").c_str(), boot) ||
	    !read_whole_file((proc_root + "/sys/kernel/osrelease").c_str(), release))
		return "";
	boot = trimmed(boot);
	release = trimmed(release);
	if (boot.empty() || release.empty() || boot.find('\n') != std::string::npos ||
	    release.find('\n') != std::string::npos)
		return "";
	return "boot " + boot + ", kernel " + release;
}

KernelSymbolSource load_kernel_symbols(const std::string &kallsyms_path, const std::string &cache_dir,
				       const std::string &identity)
{
	UniqueFd dir;
	if (!cache_dir.empty() && !identity.empty())
		dir = open_private_dir(cache_dir);
	KernelSymbolSource source;
	if (dir) {
		std::string text;
		if (read_cache(dir.get(), identity, text)) {
			source.symbols = KernelSymbols::parse(text);
			source.complete = false;
			if (!source.symbols.empty())
				return source;
		}
	}
	source.symbols = KernelSymbols::load(kallsyms_path);
	source.complete = true;
	// Only what a privileged reader sees is worth keeping: addresses, not zeros.
	if (dir && !source.symbols.empty())
		write_cache(dir.get(), identity, source.symbols);
	return source;
}
