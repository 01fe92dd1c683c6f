// syms/locator.cpp: user addresses located in objects while their processes are known.
#include "syms/locator.h"

#include <unistd.h>

#include "syms/jit_names.h"
#include "syms/live_processes.h"

Locator::Locator(const SymbolizerOptions &options, LiveProcesses &processes)
	: options_(options), processes_(processes), read_now_(options.proc_root)
{
}

const ProcessImage *Locator::image_at(uint32_t pid, uint64_t time_ns)
{
	if (const ProcessHistory *history = processes_.history())
		if (const ProcessImage *image = history->image_at(pid, time_ns))
			return image;
	if (const ProcessImage *image = read_now_.image_at(pid, time_ns))
		return image;
	// Not in the history: what it maps now is all there is.
	const ProcessMaps &now = processes_.maps_now(pid);
	if (!processes_.process(pid).alive)
		return nullptr;
	std::vector<MapEntry> executable;
	for (const MapEntry &entry : now.entries())
		if (entry.executable())
			executable.push_back(entry);
	read_now_.add_snapshot(pid, "", std::move(executable), 0);
	return read_now_.image_at(pid, time_ns);
}

void Locator::forget_processes()
{
	read_now_ = ProcessHistory{options_.proc_root};
	gone_without_perf_map_.clear();
}

// The object `mapping` of pid's image holds (null: no mapping covers the address).
uint32_t Locator::object_of(uint32_t pid, const MapEntry *mapping)
{
	using Kind = UserObject::Kind;
	ObjectLookup key;
	if (mapping && mapping->file_backed()) {
		key = {Kind::File, mapping->dev_major, mapping->dev_minor, mapping->inode, mapping->deleted, mapping->path};
	} else if (mapping && mapping->pseudo()) {
		// Only the vDSO is read, from this process's own, when the sizes agree.
		key = {Kind::Area, 0, 0, mapping->path == "[vdso]" ? mapping->end - mapping->start : 0, false, mapping->path};
	} else {
		key = {Kind::Jit, 0, 0, pid, false, ""};
	}
	auto it = object_ids_.find(key);
	if (it == object_ids_.end()) {
		// Code no file backs is named only by the process's perf map: once the process
		// is gone without one, nothing will name it, whichever process it was.
		if (std::get<0>(key) == Kind::Jit) {
			if (gone_without_perf_map_.count(pid))
				return 0;
			if (processes_.gone(pid) && access(perf_map_path(options_.perf_map_dir, pid).c_str(), F_OK) != 0) {
				gone_without_perf_map_.insert(pid);
				return 0;
			}
		}
		it = object_ids_.emplace(ObjectKey(key), uint32_t(objects_.size())).first;
		UserObject object;
		object.kind = std::get<0>(key);
		object.pid = pid;
		if (object.kind != Kind::Jit)
			object.mapping = *mapping;
		objects_.push_back(std::move(object));
	} else if (UserObject &known = objects_[it->second]; known.kind == Kind::File && known.pid != pid) {
		// The newest process to map a file is the likeliest to map it still at the end.
		known.pid = pid;
		known.mapping.start = mapping->start;
		known.mapping.end = mapping->end;
		known.mapping.offset = mapping->offset;
	}
	return it->second;
}

UserLocation Locator::locate(uint32_t pid, const ProcessImage *image, uint64_t address, bool return_address)
{
	const uint64_t back = return_address && address ? 1 : 0;
	const MapEntry *mapping = image ? image->find(address - back) : nullptr;
	UserLocation where;
	where.object = object_of(pid, mapping);
	where.offset = address;
	if (mapping) {
		where.mapped = {mapping->start, mapping->end, mapping->offset};
		if (objects_[where.object].in_mapping())
			where.offset = address - mapping->start + mapping->offset;
	}
	return where;
}

void Locator::forget_objects()
{
	objects_.resize(1);
	object_ids_.clear();
}
