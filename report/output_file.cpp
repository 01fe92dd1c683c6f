// report/output_file.cpp: writes a report file whole or not at all, never through a symlink.
#include "report/output_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <streambuf>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/pending_files.h"

namespace {

std::string errno_text(int error) { return std::strerror(error); }

// An ostream buffer over a file descriptor that keeps the first write error, because
// std::ostream only says "bad" and the user needs to hear "No space left on device".
class FdStreamBuf : public std::streambuf {
public:
	explicit FdStreamBuf(int fd) : fd_(fd), buffer_(1 << 16)
	{
		setp(buffer_.data(), buffer_.data() + buffer_.size());
	}
	int error() const { return error_; }

protected:
	int_type overflow(int_type ch) override
	{
		if (!drain())
			return traits_type::eof();
		if (!traits_type::eq_int_type(ch, traits_type::eof())) {
			*pptr() = traits_type::to_char_type(ch);
			pbump(1);
		}
		return traits_type::not_eof(ch);
	}

	std::streamsize xsputn(const char *data, std::streamsize size) override
	{
		const auto room = epptr() - pptr();
		if (size <= room) {
			std::memcpy(pptr(), data, size_t(size));
			pbump(int(size));
			return size;
		}
		// Large pieces (a whole SVG held in a string) skip the copy.
		if (!drain() || !write_all(data, size_t(size)))
			return 0;
		return size;
	}

	int sync() override { return drain() ? 0 : -1; }

private:
	bool drain()
	{
		const size_t pending = size_t(pptr() - pbase());
		setp(buffer_.data(), buffer_.data() + buffer_.size());
		return write_all(buffer_.data(), pending);
	}

	bool write_all(const char *data, size_t size)
	{
		if (!error_ && !::write_all(fd_, std::string_view(data, size)))
			error_ = errno;
		return !error_;
	}

	int fd_;
	int error_ = 0;
	std::vector<char> buffer_;
};

// The temporary file until it is renamed: removed on every other way out, exceptions too,
// and by an early _exit (a second stop signal) through pending_files.
struct TemporaryFile {
	int dir_fd;
	std::string name;
	bool renamed = false;
	uint64_t pending = 0;
	void created(std::string created_name)
	{
		name = std::move(created_name);
		pending = pending_files::add(dir_fd, name);
	}
	~TemporaryFile()
	{
		if (!renamed && !name.empty())
			unlinkat(dir_fd, name.c_str(), 0);
		if (pending)
			pending_files::forget(pending);
	}
};

std::string random_suffix()
{
	uint8_t bytes[6];
	if (getrandom(bytes, sizeof(bytes), GRND_NONBLOCK) != ssize_t(sizeof(bytes))) {
		// O_EXCL keeps a predictable name safe; randomness only avoids retries.
		uint64_t mix = uint64_t(getpid()) * 0x9e3779b97f4a7c15ull ^ uint64_t(clock());
		std::memcpy(bytes, &mix, sizeof(bytes));
	}
	static const char digits[] = "0123456789abcdef";
	std::string text;
	for (uint8_t b : bytes) {
		text += digits[b >> 4];
		text += digits[b & 15];
	}
	return text;
}

// /dev itself, or a process's fd directory (/dev/fd and /proc/self/fd resolve to
// /proc/PID/fd). Other /proc files are not reports' places and go the usual way, where
// creating the temporary file fails.
bool in_device_directory(const std::string &dir)
{
	char *real = realpath(dir.c_str(), nullptr);
	if (!real)
		return false;
	const std::string_view path = real;
	const bool fd_dir = path.starts_with("/proc/") && path.ends_with("/fd") &&
			    path.find('/', 6) == path.size() - 3;
	const bool device = path == "/dev" || fd_dir;
	free(real);
	return device;
}

Status write_stream(int fd, const std::string &path, const std::function<void(std::ostream &)> &write)
{
	if (const int error = write_to_fd(fd, write))
		return Error("cannot write " + path + ": " + errno_text(error));
	return {};
}

// For what is not a regular file: nothing to replace, nothing to make atomic.
Status write_in_place(int dir_fd, const std::string &path, const std::string &base, int flags,
		      const std::function<void(std::ostream &)> &write)
{
	UniqueFd fd(openat(dir_fd, base.c_str(), O_WRONLY | O_CLOEXEC | flags));
	if (!fd)
		return Error("cannot write " + path + ": " + errno_text(errno));
	if (Status written = write_stream(fd.get(), path, write); !written.ok())
		return written;
	if (close(fd.release()) != 0)
		return Error("cannot write " + path + ": " + errno_text(errno));
	return {};
}

} // namespace

namespace {

// Where a report for path goes, found before anything is written.
struct Target {
	UniqueFd dir;
	std::string dir_name, base;
	bool in_place = false; // a device, pipe or socket: written as it is
	int in_place_flags = 0;
};

Result<Target> find_target(const std::string &path)
{
	if (path.empty())
		return Error("no output file name given");
	Target target;
	const size_t slash = path.rfind('/');
	target.dir_name = slash == std::string::npos ? "."
			  : slash == 0		      ? "/"
						      : path.substr(0, slash);
	target.base = slash == std::string::npos ? path : path.substr(slash + 1);
	if (target.base.empty() || target.base == "." || target.base == "..")
		return Error("cannot write " + path + ": it names a directory, not a file");

	target.dir.reset(open(target.dir_name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!target.dir)
		return Error("cannot write " + path + ": directory " + target.dir_name + ": " + errno_text(errno));

	// /dev holds devices and aliases of open files (/dev/stdout, /dev/fd/N), where a
	// rename would replace the device node or the alias itself: write into what the
	// name already is. A block device is a disk, never a report.
	if (in_device_directory(target.dir_name)) {
		struct stat device;
		if (stat(path.c_str(), &device) != 0)
			return Error("cannot write " + path + ": " + errno_text(errno));
		if (S_ISBLK(device.st_mode) || S_ISDIR(device.st_mode))
			return Error("cannot write " + path + ": it is not a file or a character device");
		target.in_place = true;
		return target;
	}
	struct stat existing;
	if (fstatat(target.dir.get(), target.base.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(existing.st_mode))
			return Error("cannot write " + path + ": it is a directory");
		if (S_ISBLK(existing.st_mode))
			return Error("cannot write " + path + ": it is a block device");
		// A named pipe or a terminal is written as it is. O_NOFOLLOW: a symlink put in
		// its place between this check and the open is not followed.
		if (S_ISCHR(existing.st_mode) || S_ISFIFO(existing.st_mode) || S_ISSOCK(existing.st_mode)) {
			target.in_place = true;
			target.in_place_flags = O_NOFOLLOW;
		}
	}
	return target;
}

// A dot file beside the target: same filesystem, so the rename is atomic. The name is
// shortened so a long target name cannot push it past NAME_MAX. temp gets its name.
Result<UniqueFd> create_temporary(const Target &target, TemporaryFile &temp)
{
	UniqueFd fd;
	for (int attempt = 0; attempt < 100 && !fd; attempt++) {
		std::string name = "." + target.base.substr(0, 200) + "." + random_suffix() + ".tmp";
		fd.reset(openat(target.dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
				0644));
		if (fd)
			temp.created(std::move(name));
		else if (errno != EEXIST)
			break;
	}
	if (!fd)
		return Error("cannot create a file in " + target.dir_name + ": " + errno_text(errno));
	return fd;
}

} // namespace

int write_to_fd(int fd, const std::function<void(std::ostream &)> &write)
{
	FdStreamBuf buffer(fd);
	std::ostream out(&buffer);
	write(out);
	out.flush();
	return out ? 0 : buffer.error() ? buffer.error() : EIO;
}

Status check_output_file(const std::string &path)
{
	Result<Target> target = find_target(path);
	if (!target.ok() || target->in_place)
		return target.status();
	TemporaryFile temp{target->dir.get(), ""}; // removed again on the way out
	return create_temporary(*target, temp).status();
}

Status write_output_file(const std::string &path, const std::function<void(std::ostream &)> &write)
{
	Result<Target> found = find_target(path);
	if (!found.ok())
		return found.status();
	const Target &target = *found;
	if (target.in_place)
		return write_in_place(target.dir.get(), path, target.base, target.in_place_flags, write);

	TemporaryFile temp{target.dir.get(), ""};
	Result<UniqueFd> fd = create_temporary(target, temp);
	if (!fd.ok())
		return fd.status();
	if (Status written = write_stream(fd->get(), path, write); !written.ok())
		return written;
	if (fsync(fd->get()) != 0)
		return Error("cannot write " + path + ": " + errno_text(errno));
	// close() is where some filesystems (NFS) report a failed write.
	if (close(fd->release()) != 0)
		return Error("cannot write " + path + ": " + errno_text(errno));
	if (renameat(target.dir.get(), temp.name.c_str(), target.dir.get(), target.base.c_str()) != 0)
		return Error("cannot write " + path + ": " + errno_text(errno));
	temp.renamed = true;
	// The new name survives a crash only once the directory is on disk; the file is in
	// place either way, so a failure here is not reported.
	fsync(target.dir.get());
	return {};
}
