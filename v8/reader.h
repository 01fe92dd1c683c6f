// v8/reader.h: the user half of the V8 walk while sampling: answers the kernel's questions
// about processes (Node or not, and its V8's layout) and names each code object the walk
// meets, while its process lives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kernel_asks.h"
#include "runtime/room.h"

class V8Reader : public RuntimeReader {
public:
	// gcs: the kernel's count of each process's GCs (v8_gcs; -1: none), which the uprobes
	// attached by attach move on (empty: not counted).
	V8Reader(const RuntimeMaps &maps, int gcs, AttachUprobe attach);
	~V8Reader();
	V8Reader(const V8Reader &) = delete;
	V8Reader &operator=(const V8Reader &) = delete;

	void prepare(const std::vector<uint32_t> &pids, MapsReads &maps) override;
	// Classifies the processes the kernel asked about (one line on stderr for each Node file
	// whose V8 it cannot read) and names the code objects met since.
	void tick(MapsReads &maps) override;
	bool name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const override;
	// "js: 1 process followed (V8 11.3.244), ...".
	std::string stats() const override;
	void end_window() override;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
