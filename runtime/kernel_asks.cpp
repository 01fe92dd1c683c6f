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
	return maps;
}

void forget_runtime_codes(int map_fd, uint32_t pid)
{
	std::vector<runtime_code_key> stale;
	runtime_code_key key, next;
	for (runtime_code_key *prev = nullptr; bpf_map_get_next_key(map_fd, prev, &next) == 0; prev = &key) {
		key = next;
		if (next.pid == pid)
			stale.push_back(next);
	}
	for (const runtime_code_key &gone : stale)
		bpf_map_delete_elem(map_fd, &gone);
}

void forget_runtime_code(int map_fd, const runtime_code_key &key)
{
	bpf_map_delete_elem(map_fd, &key);
}

ForgetCode forgetting_in(int map_fd)
{
	return [map_fd](const runtime_code_key &key) { forget_runtime_code(map_fd, key); };
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
