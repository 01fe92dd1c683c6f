// v8/room.cpp: V8's row among the runtimes: its frames are the JavaScript functions a Node.js
// process ran, walked through V8's frames and named from its heap. Its switch is --no-js:
// a Node user thinks of the JavaScript they wrote, not of the engine under it.
#include "v8/room.h"

#include <linux/types.h>

#include "v8/reader.h"
#include "v8/v8.h"

namespace {

std::unique_ptr<RuntimeReader> start_v8(const RuntimeKernel &kernel)
{
	const std::optional<RuntimeMaps> maps = RuntimeMaps::named(kernel.map_fd, "v8");
	return maps ? std::make_unique<V8Reader>(*maps, kernel.map_fd("v8_gcs"), kernel.attach_uprobe) : nullptr;
}

} // namespace

const RuntimeRoom v8_room = {
	.name = "js",
	.help = "show Node.js's JIT code as it is: by default, in processes running Node 18 to 24 (V8 10.2 or "
		"later, without pointer compression), its frames are shown as the JavaScript functions they ran, as "
		"hotA (app.js:5), with the functions optimized code inlined as frames of their own; needs --unwind "
		"auto",
	.tag = V8_FRAME_TAG,
	.kind = FrameKind::JavaScript,
	.unnamed = "[v8 JIT]",
	.start = start_v8,
};
