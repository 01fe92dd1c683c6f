// syms/symbolizer.cpp: the facade over the kernel's names, the locator and the user namer.
#include "syms/symbolizer.h"

#include "syms/kernel_namer.h"
#include "syms/live_processes.h"
#include "proc/process_history.h"
#include "syms/user_namer.h"

struct Symbolizer::Impl {
	explicit Impl(SymbolizerOptions o)
		: options(std::move(o)), processes(options.proc_root, stats), locator(options, processes),
		  kernel(options, stats), user(options, stats, processes)
	{
	}

	SymbolizerOptions options;
	SymbolizerStats stats;
	LiveProcesses processes;
	Locator locator;
	KernelNamer kernel;
	UserNamer user;
};

Symbolizer::Symbolizer(SymbolizerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Symbolizer::~Symbolizer() = default;

void Symbolizer::set_process_history(const ProcessHistory *history)
{
	impl_->processes.set_history(history);
	impl_->user.forget_processes();
}

void Symbolizer::load_kernel_symbols()
{
	impl_->kernel.load();
}

const KernelSymbolRecord *Symbolizer::loaded_kernel_symbol(uint64_t address, bool return_address,
							     uint64_t time_ns) const
{
	return KernelNamer::loaded_symbol(impl_->processes.history(), address, return_address, time_ns);
}

Frame Symbolizer::kernel_frame(uint64_t address, bool return_address, uint64_t time_ns)
{
	return kernel_frame(address, return_address, loaded_kernel_symbol(address, return_address, time_ns));
}

Frame Symbolizer::kernel_frame(uint64_t address, bool return_address, const KernelSymbolRecord *program)
{
	return impl_->kernel.frame(address, return_address, program);
}

const ProcessImage *Symbolizer::image_at(uint32_t pid, uint64_t time_ns)
{
	return impl_->locator.image_at(pid, time_ns);
}

void Symbolizer::forget_live_processes()
{
	impl_->locator.forget_processes();
	impl_->processes.forget();
	impl_->user.forget_processes();
}

UserLocation Symbolizer::locate(uint32_t pid, const ProcessImage *image, uint64_t address, bool return_address)
{
	return impl_->locator.locate(pid, image, address, return_address);
}

size_t Symbolizer::object_count() const
{
	return impl_->locator.object_count();
}

void Symbolizer::end_window()
{
	impl_->locator.forget_objects();
	impl_->user.end_window();
}

void Symbolizer::user_frames(const UserLocation &where, bool return_address, std::vector<Frame> &out)
{
	impl_->user.frames(impl_->locator.object(where.object), where, return_address, out);
}

Frame Symbolizer::user_frame(uint32_t pid, uint64_t address, uint64_t time_ns)
{
	std::vector<Frame> frames;
	user_frames(locate(pid, image_at(pid, time_ns), address, false), false, frames);
	return std::move(frames.back());
}

std::vector<std::string> Symbolizer::wanted_debug_files()
{
	std::vector<std::string> wanted;
	for (uint32_t id = 1; id < impl_->locator.object_count(); id++)
		if (std::optional<std::string> build_id = impl_->user.wanted_debug_file(impl_->locator.object(id)))
			wanted.push_back(std::move(*build_id));
	return wanted;
}

Status Symbolizer::add_debug_file(const std::string &build_id, int fd)
{
	return impl_->user.add_debug_file(build_id, fd);
}

SymbolizerStats Symbolizer::stats() const
{
	SymbolizerStats stats = impl_->stats;
	impl_->user.count_kept(stats);
	return stats;
}
