// python/room.cpp: CPython's row among the runtimes: its frames are the Python functions
// an eval frame of the interpreter ran, named from its code objects.
#include "python/room.h"

#include <linux/types.h>

#include "python/python.h"
#include "python/reader.h"

namespace {

std::unique_ptr<RuntimeReader> start_python(const RuntimeKernel &kernel)
{
	const std::optional<RuntimeMaps> maps = RuntimeMaps::named(kernel.map_fd, "python");
	return maps ? std::make_unique<PythonReader>(*maps) : nullptr;
}

} // namespace

const RuntimeRoom python_room = {
	.name = "python",
	.help = "show CPython's interpreter as it is: by default, in processes running CPython 3.8 to 3.13, each "
		"of its eval frames is shown as the Python functions it ran, as fib (fib.py:2); needs --unwind auto "
		"or dwarf",
	.tag = PYTHON_FRAME_TAG,
	.kind = FrameKind::Python,
	.unnamed = "[python]",
	.start = start_python,
};
