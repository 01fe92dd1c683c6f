// v8/room.h: V8 (Node.js) as a runtime of the run (runtime/room.h): its row.
#pragma once

#include "runtime/room.h"

extern const RuntimeRoom v8_room;
