// tests/precompiled.h: the headers nearly every test file includes, compiled once into
// build/tests/precompiled.h.gch, which the Makefile puts before each test file
// (-include): a second of compile time a file. Test files still include what they use.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support.h"
