// report/output_file.h: writes a report file whole or not at all, never through a symlink.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "base/error.h"

// Calls write with a stream onto a new file beside path (created with O_EXCL, mode 0644
// less the umask), fsyncs it and renames it over path. Readers see the old file or the
// whole new one; a symlink at path is replaced, never followed. Ok, or path is untouched,
// the temporary file is gone, and the error says what failed. An exception from write is
// rethrown after the same cleanup.
// What is not a file is written in place: a named pipe, a character device (/dev/null),
// and in /dev and /proc/PID/fd the names of open files (/dev/stdout, /dev/fd/N).
// Directories and block devices are refused.
Status write_output_file(const std::string &path, const std::function<void(std::ostream &)> &write);

// What write_output_file would say before it writes anything, checked before sampling so
// that a run never ends with nowhere to put its report: ok when a report can be written
// there (for a regular file, a temporary file is created beside it and removed again).
Status check_output_file(const std::string &path);

// Writes onto an open fd (stdout) through write's stream; 0, or the errno of the write
// that failed.
int write_to_fd(int fd, const std::function<void(std::ostream &)> &write);
