// python/room.h: CPython as a runtime of the run (runtime/room.h): its row.
#pragma once

#include "runtime/room.h"

extern const RuntimeRoom python_room;
