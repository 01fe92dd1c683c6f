// hotspot/runtime.h: recognise a HotSpot JVM in a process (libjvm.so in its maps), and read
// what its walk and its names need: the VM's tables, its version, its code heaps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/fd.h"
#include "hotspot/layout.h"
#include "proc/maps.h"

// What a process turned out to be.
struct HotSpotDetection {
	enum Kind {
		NotJava, // no libjvm.so in its maps
		Java,    // a JVM whose frames can be walked: layout and heaps are set
		Unknown, // a JVM this profiler cannot follow: note says why, in one line
		NotYet,  // a JVM still starting (its tables or code heaps are not set up): ask again
	};
	Kind kind = NotJava;
	std::string libjvm; // its path, as the process maps it
	uint64_t bias = 0;  // libjvm's load bias
	// libjvm's mappings never written, from its first on (its text and read-only data):
	// what lies there is the same for the process's life.
	uint64_t image_low = 0, image_high = 0;
	HotSpotLayout layout{};
	HotSpotHeaps heaps{};
	std::vector<HotSpotFixedBlob> fixed; // the interpreter's blob and the call stub's
	std::string version; // "17.0.13", when known
	std::string note;
	std::shared_ptr<UniqueFd> mem; // its /proc/PID/mem, kept for the names
	// Where its count of classes unloaded is (hotspot_fingerprint in hotspot/hotspot.h): 0
	// when it keeps no perf data (-XX:-UsePerfData).
	uint64_t unloaded_classes = 0;

	double read_ms = 0; // time spent reading its tables
};

// Looks at /proc/PID/maps (through reads: read once for every runtime that asks), the
// libjvm.so mapped there (through /proc/PID/root), and the process's memory. Never throws; a
// process gone meanwhile is NotJava.
HotSpotDetection detect_hotspot(uint32_t pid, MapsReads &reads);

// The address of the 64-bit counter `name` ("java.cls.unloadedClasses") in a JVM's perf data
// at `prologue` (PerfMemory::_prologue: a PerfDataPrologue, then its entries, as HotSpot's
// perfMemory.hpp lays them out, little-endian); 0 when there is none of that name, or the
// data does not read as such. Reads at most kMaxHotSpotPerfData bytes.
uint64_t hotspot_perf_counter(uint64_t prologue, const ReadMemory &read, std::string_view name);
constexpr uint32_t kMaxHotSpotPerfData = 1 << 20;
