// hotspot/room.cpp: HotSpot's row among the runtimes: its frames are the Java methods a JVM
// ran, interpreted or compiled, and its stubs, walked in the kernel and named from the JVM's
// own tables, with no agent in the JVM.
#include "hotspot/room.h"

#include <linux/types.h>

#include "hotspot/hotspot.h"
#include "hotspot/reader.h"

namespace {

std::unique_ptr<RuntimeReader> start_hotspot(const RuntimeKernel &kernel)
{
	const std::optional<RuntimeMaps> maps = RuntimeMaps::named(kernel.map_fd, "hotspot");
	return maps ? std::make_unique<HotSpotReader>(*maps) : nullptr;
}

} // namespace

const RuntimeRoom hotspot_room = {
	.name = "java",
	.help = "show HotSpot JVMs' code as it is: by default, in processes running a HotSpot JVM (JDK 17 and 25 "
		"verified), its interpreted and compiled frames are shown as the Java methods they ran, as "
		"holdout.Split.hotA (Split.java:15), with the methods C2 inlined as frames of their own, and its stubs by their kind; needs --unwind auto or dwarf",
	.tag = HOTSPOT_FRAME_TAG,
	.kind = FrameKind::Java,
	.unnamed = "[java]",
	.start = start_hotspot,
};
