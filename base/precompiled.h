// base/precompiled.h: the standard headers most of the profiler's files include, compiled
// once per build (build/, build-asan/, build-fuzz/), which the Makefile puts before each of
// its files (-include, -include-pch): half a second of a file's 2 to 4 s of compile time,
// in each of the three builds make test makes. Every file still includes what it uses;
// this one is a build detail, and no file includes it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>
