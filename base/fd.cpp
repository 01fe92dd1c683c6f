// base/fd.cpp: owning types for file descriptors and read-only file mappings.
#include "base/fd.h"

#include <cerrno>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void UniqueFd::reset(int fd)
{
	if (fd_ >= 0)
		close(fd_);
	fd_ = fd;
}

MappedFile::~MappedFile()
{
	if (data_)
		munmap(const_cast<uint8_t *>(data_), size_);
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept
{
	if (this != &other) {
		if (data_)
			munmap(const_cast<uint8_t *>(data_), size_);
		data_ = std::exchange(other.data_, nullptr);
		size_ = std::exchange(other.size_, 0);
	}
	return *this;
}

MappedFile MappedFile::map(int fd)
{
	MappedFile file;
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return file;
	void *data = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
	if (data == MAP_FAILED)
		return file;
	file.data_ = static_cast<const uint8_t *>(data);
	file.size_ = static_cast<size_t>(st.st_size);
	return file;
}

MappedFile MappedFile::map_shared(int fd, size_t size)
{
	MappedFile mapped;
	void *data = fd < 0 || size == 0 ? MAP_FAILED : mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
	if (data == MAP_FAILED)
		return mapped;
	mapped.data_ = static_cast<const uint8_t *>(data);
	mapped.size_ = size;
	return mapped;
}

UniqueFd open_read_only(const char *path)
{
	return UniqueFd(open(path, O_RDONLY | O_CLOEXEC));
}

bool read_whole_file(const char *path, std::string &out)
{
	out.clear();
	UniqueFd fd = open_read_only(path);
	return fd && read_all(fd.get(), out);
}

bool read_all(int fd, std::string &out)
{
	// /proc files report size 0, so grow by doubling instead of trusting stat.
	size_t used = 0;
	out.resize(64 * 1024);
	for (;;) {
		if (used == out.size())
			out.resize(out.size() * 2);
		ssize_t n = read(fd, out.data() + used, out.size() - used);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			out.clear();
			return false;
		}
		if (n == 0)
			break;
		used += static_cast<size_t>(n);
	}
	out.resize(used);
	return true;
}

size_t read_up_to(int fd, void *buffer, size_t size)
{
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(fd, static_cast<uint8_t *>(buffer) + got, size - got, off_t(got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += size_t(n);
	}
	return got;
}

bool write_all(int fd, std::string_view data)
{
	while (!data.empty()) {
		ssize_t n = write(fd, data.data(), data.size());
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return false;
		}
		data.remove_prefix(size_t(n));
	}
	return true;
}

UniqueFd open_in_root(int root_dir, const std::string &path, bool no_symlinks)
{
	open_how how{};
	how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (no_symlinks ? O_NOFOLLOW : 0);
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | (no_symlinks ? RESOLVE_NO_SYMLINKS : 0);
	size_t first = path.find_first_not_of('/');
	if (first == std::string::npos)
		return UniqueFd();
	long fd = syscall(SYS_openat2, root_dir, path.c_str() + first, &how, sizeof(how));
	return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

bool ours_and_private(int fd, struct stat &st)
{
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077);
}

UniqueFd open_private_dir(const std::string &dir)
{
	mkdir(dir.c_str(), 0700);
	UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	struct stat st;
	return ours_and_private(fd.get(), st) ? std::move(fd) : UniqueFd();
}
