// hotspot/reader.h: the user half of the HotSpot walk: answers the kernel's questions about
// processes (a JVM or not, and where its code and fields are), and names the Java frames of
// stored stacks from the JVM's memory while it lives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/room.h"

class HotSpotReader : public RuntimeReader {
public:
	explicit HotSpotReader(const RuntimeMaps &maps);
	~HotSpotReader();
	HotSpotReader(const HotSpotReader &) = delete;
	HotSpotReader &operator=(const HotSpotReader &) = delete;

	void prepare(const std::vector<uint32_t> &pids, MapsReads &maps) override;
	// Classifies the processes the kernel asked about (one line on stderr for each JVM it
	// cannot follow, once per reason), and reads the compiled methods the walk met for the
	// first time, with the methods inlined into them, while their JVM lives.
	void tick(MapsReads &maps) override;
	// A Java frame (hotspot/hotspot.h's tagged value): its method and line read from the
	// JVM's memory, once per method, and a compiled frame's inlined methods; false when it
	// cannot be read (the process gone, the method freed), and the reports then show [java].
	bool name(uint32_t pid, uint64_t frame, RuntimeFrameName &out) const override;
	// "java: 1 JVM followed, ...".
	std::string stats() const override;
	void end_window() override;

private:
	struct Impl;
	std::unique_ptr<Impl> impl_;
};
