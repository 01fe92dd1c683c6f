// tests/test_report_data.h: made-up profiles and tool lookups for the SVG and pprof tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "report/model.h"

// Two processes, kernel and user frames, C++ names full of < > & and quotes, unnamed
// frames (module+offset and unknown), bytes that are not UTF-8, an inlined frame.
// 1,000 samples; see the .cpp for each stack and its count.
Profile tricky_profile();

// `stacks` unique stacks, 20 to 40 frames deep, names 30 to 60 characters, counts
// falling off like a real profile's (a few hot stacks, a long tail of single samples).
// The same seed gives the same profile.
Profile many_stacks_profile(size_t stacks, uint64_t seed = 1);

// write_folded -E's lines: "comm-PID;root;...;leaf" -> count.
std::map<std::string, uint64_t> folded_lines(const Profile &profile);

// The tool's absolute path from PATH, or "" when it is not installed.
std::string find_tool(const std::string &name);

// go tool pprof -traces, one entry per sample: its labels, frames (leaf first), count.
struct Trace {
	std::map<std::string, std::string> labels;
	std::vector<std::string> frames;
	uint64_t count = 0;

	std::string label(const std::string &key) const
	{
		auto it = labels.find(key);
		return it == labels.end() ? "" : it->second;
	}
};

// The samples of a pprof file as go tool pprof reads them (a missing go fails the test).
std::vector<Trace> pprof_traces(const std::string &file);
