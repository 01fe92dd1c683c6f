// base/fd.h: owning types for file descriptors and read-only file mappings.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

class UniqueFd {
public:
	UniqueFd() = default;
	explicit UniqueFd(int fd) : fd_(fd) {}
	~UniqueFd() { reset(); }
	UniqueFd(UniqueFd &&other) noexcept : fd_(other.release()) {}
	UniqueFd &operator=(UniqueFd &&other) noexcept
	{
		if (this != &other)
			reset(other.release());
		return *this;
	}
	UniqueFd(const UniqueFd &) = delete;
	UniqueFd &operator=(const UniqueFd &) = delete;

	int get() const { return fd_; }
	bool valid() const { return fd_ >= 0; }
	explicit operator bool() const { return valid(); }
	int release() { return std::exchange(fd_, -1); }
	void reset(int fd = -1);

private:
	int fd_ = -1;
};

// A whole regular file mapped read-only; empty when the file could not be mapped.
class MappedFile {
public:
	MappedFile() = default;
	~MappedFile();
	MappedFile(MappedFile &&other) noexcept
		: data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0))
	{
	}
	MappedFile &operator=(MappedFile &&other) noexcept;
	MappedFile(const MappedFile &) = delete;
	MappedFile &operator=(const MappedFile &) = delete;

	// Maps the file behind fd (which may be closed afterwards). Fails on anything but a
	// non-empty regular file.
	static MappedFile map(int fd);
	// Maps the first `size` bytes behind fd read-only and shared (a BPF array's slots, which
	// fstat does not size): what the kernel writes there shows through.
	static MappedFile map_shared(int fd, size_t size);

	std::span<const uint8_t> bytes() const { return {data_, size_}; }
	bool empty() const { return size_ == 0; }

private:
	const uint8_t *data_ = nullptr;
	size_t size_ = 0;
};

// open(2) with O_RDONLY | O_CLOEXEC.
UniqueFd open_read_only(const char *path);

// Reads a whole file into out, including /proc files whose size stat reports as 0.
bool read_whole_file(const char *path, std::string &out);
// The rest of an open file, to its end, however long (for /proc files, whose size is 0).
bool read_all(int fd, std::string &out);
// The first `size` bytes of a file (its size when it was checked), or fewer if it ends
// sooner: a file its owner keeps appending to cannot make the reader read on. Returns the
// bytes read.
size_t read_up_to(int fd, void *buffer, size_t size);
// Writes all of data, through short writes and EINTR; false with errno set on failure.
bool write_all(int fd, std::string_view data);

// True when fd is ours and no one else can read it or write into it; st is its stat.
bool ours_and_private(int fd, struct stat &st);
// A directory of caches (created 0700 if missing), when it is a real directory of ours
// that no one else can read or write: never reached through a symlink.
UniqueFd open_private_dir(const std::string &dir);

// Opens path (absolute or not) as if root_dir were "/": absolute symlinks and ".." stay
// inside it, magic links (/proc/self/...) are refused, and with no_symlinks so is any
// symlink. Read-only and non-blocking (a FIFO put where a file was expected must not
// stall the caller). The way to open a file a process named inside its own mount namespace.
UniqueFd open_in_root(int root_dir, const std::string &path, bool no_symlinks = false);
