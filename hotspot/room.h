// hotspot/room.h: HotSpot (Java) as a runtime of the run (runtime/room.h): its row.
#pragma once

#include "runtime/room.h"

extern const RuntimeRoom hotspot_room;
