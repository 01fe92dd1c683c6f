// report/model.cpp: how every report names a frame.
#include "report/model.h"

#include <cinttypes>
#include <cstdio>
#include <string_view>

namespace {

// One row per kind of frame, in FrameKind's order.
const FrameKindRule rules[] = {
	// flamegraph.pl's kernel orange: green 100 below red, no blue.
	{FrameKind::Kernel, "kernel", "kernel", false, {190, 90, 0}, {65, 65, 0}},
	{FrameKind::Native, "native", "native", false, {200, 50, 50}, {55, 80, 80}},
	// Green, as flamegraph.pl colours an interpreted language's frames.
	{FrameKind::Python, "python", "cpython", true, {50, 180, 50}, {60, 55, 60}},
	// Aqua, as flamegraph.pl's js palette colours JIT'd JavaScript.
	{FrameKind::JavaScript, "js", "v8js", true, {0, 170, 170}, {50, 60, 60}},
	// Violet: apart from Python's green, JavaScript's aqua and native code's reds.
	{FrameKind::Java, "java", "jvm", true, {130, 90, 200}, {50, 40, 40}},
};

} // namespace

const FrameKindRule &frame_kind_rule(FrameKind kind)
{
	static_assert(sizeof(rules) / sizeof(rules[0]) == size_t(FrameKind::Java) + 1, "a row per kind");
	return rules[size_t(kind)];
}

std::string frame_label(const Frame &frame)
{
	// py-spy's "fib (fib.py:2)": the file by its last component.
	if (frame_kind_rule(frame.kind).runtime && !frame.source_file.empty()) {
		const size_t slash = frame.source_file.rfind('/');
		std::string text = frame.name + " (" + frame.source_file.substr(slash == std::string::npos ? 0 : slash + 1);
		if (frame.line)
			text += ':' + std::to_string(frame.line);
		return text + ')';
	}
	if (frame.named())
		return frame.name;
	if (frame.module.empty())
		return "[unknown]";
	std::string_view module = frame.module;
	// "[heap]" and "[vdso]" are already bracketed; a path shows its last component.
	if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
		module = module.substr(1, module.size() - 2);
	else if (size_t slash = module.rfind('/'); slash != std::string_view::npos && slash + 1 < module.size())
		module = module.substr(slash + 1);
	char offset[24];
	std::snprintf(offset, sizeof(offset), "0x%" PRIx64, frame.module_offset);
	return "[" + std::string(module) + "+" + offset + "]";
}
