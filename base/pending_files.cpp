// base/pending_files.cpp: the half-written files, under one lock.
#include "base/pending_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <mutex>

namespace pending_files {
namespace {

struct Pending {
	int dir_fd;
	std::string name;
};

std::mutex mutex;
std::map<uint64_t, Pending> files;
uint64_t last_token = 0;

} // namespace

uint64_t add(int dir_fd, std::string name)
{
	std::lock_guard lock(mutex);
	files.emplace(++last_token, Pending{dir_fd, std::move(name)});
	return last_token;
}

void forget(uint64_t token)
{
	std::lock_guard lock(mutex);
	files.erase(token);
}

void remove_all()
{
	std::lock_guard lock(mutex);
	for (const auto &[token, file] : files)
		unlinkat(file.dir_fd, file.name.c_str(), 0);
	files.clear();
}

} // namespace pending_files
