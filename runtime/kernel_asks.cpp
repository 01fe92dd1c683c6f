// runtime/kernel_asks.cpp: the asked pids and the ring of what was met first, read.
#include "runtime/kernel_asks.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "runtime/runtime.h"

void answer_asked_pids(int map_fd, const std::function<void(uint32_t pid)> &answer)
{
	std::vector<uint32_t> asked;
	uint32_t pid;
	for (int found = bpf_map_get_next_key(map_fd, nullptr, &pid); found == 0;
	     found = bpf_map_get_next_key(map_fd, &pid, &pid))
		asked.push_back(pid);
	for (uint32_t each : asked) {
		answer(each);
		bpf_map_delete_elem(map_fd, &each);
	}
}

std::optional<RuntimeMaps> RuntimeMaps::named(const MapFdByName &map_fd, const std::string &prefix)
{
	RuntimeMaps maps;
	maps.processes = map_fd((prefix + "_processes").c_str());
	maps.wanted = map_fd((prefix + "_wanted").c_str());
	maps.codes = map_fd((prefix + "_codes").c_str());
	maps.seen = map_fd((prefix + "_seen").c_str());
	if (maps.processes < 0 || maps.wanted < 0 || maps.codes < 0 || maps.seen < 0)
		return std::nullopt;
	maps.generation = map_fd((prefix + "_generation").c_str());
	return maps;
}

// After objects left the codes map: the generation its front's entries must hold, one on.
static void move_generation_on(const RuntimeMaps &maps)
{
	const uint32_t zero = 0;
	uint64_t generation = 0;
	if (maps.generation >= 0 && bpf_map_lookup_elem(maps.generation, &zero, &generation) == 0) {
		generation++;
		bpf_map_update_elem(maps.generation, &zero, &generation, BPF_ANY);
	}
}

void forget_runtime_codes(const RuntimeMaps &maps, uint32_t pid)
{
	const int map_fd = maps.codes;
	std::vector<runtime_code_key> stale;
	runtime_code_key key, next;
	for (runtime_code_key *prev = nullptr; bpf_map_get_next_key(map_fd, prev, &next) == 0; prev = &key) {
		key = next;
		if (next.pid == pid)
			stale.push_back(next);
	}
	for (const runtime_code_key &gone : stale)
		bpf_map_delete_elem(map_fd, &gone);
	move_generation_on(maps);
}

void forget_runtime_code(const RuntimeMaps &maps, const runtime_code_key &key)
{
	bpf_map_delete_elem(maps.codes, &key);
	move_generation_on(maps);
}

ForgetCode forgetting_in(const RuntimeMaps &maps)
{
	return [maps](const runtime_code_key &key) { forget_runtime_code(maps, key); };
}

SeenRecords::SeenRecords(int map_fd, size_t record_size) : record_size_(record_size)
{
	auto on_record = [](void *context, void *data, size_t size) {
		auto *self = static_cast<SeenRecords *>(context);
		if (size >= self->record_size_) {
			const auto *bytes = static_cast<const uint8_t *>(data);
			self->records_.emplace_back(bytes, bytes + self->record_size_);
		}
		return 0;
	};
	if (map_fd >= 0)
		ring_ = ring_buffer__new(map_fd, on_record, this, nullptr);
}

SeenRecords::~SeenRecords()
{
	if (ring_)
		ring_buffer__free(ring_);
}

const std::vector<std::vector<uint8_t>> &SeenRecords::take()
{
	records_.clear();
	if (ring_)
		ring_buffer__consume(ring_);
	return records_;
}
