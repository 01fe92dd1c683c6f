// tests/test_report_model.cpp: how every report names a frame (frame_label).
#include <doctest/doctest.h>

#include "report/model.h"

TEST_SUITE("unit") {

TEST_CASE("model: frame_label shows the name, else the module and offset, else [unknown]")
{
	Frame frame;
	CHECK(frame_label(frame) == "[unknown]");
	frame.module = "/usr/lib/x86_64-linux-gnu/libfoo.so.1";
	frame.module_offset = 0x1234;
	CHECK(frame_label(frame) == "[libfoo.so.1+0x1234]");
	frame.module = "[heap]";
	frame.module_offset = 0x10;
	CHECK(frame_label(frame) == "[heap+0x10]");
	frame.kind = FrameKind::Kernel;
	frame.module = "ext4";
	frame.module_offset = 0x20;
	CHECK(frame_label(frame) == "[ext4+0x20]");
	frame.name = "fixture::Spinner::spin(long)";
	CHECK(frame_label(frame) == "fixture::Spinner::spin(long)");
}

} // TEST_SUITE("unit")
