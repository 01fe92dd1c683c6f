// base/pending_files.h: files being written that must not outlive the process half
// written (a report's temporary file before its rename): whoever ends the process early,
// with _exit, removes them first.
#pragma once

#include <cstdint>
#include <string>

namespace pending_files {

// name, in the directory dir_fd (open until forget), is half written from now on; the
// token forget takes.
uint64_t add(int dir_fd, std::string name);
// Done with it: renamed, or removed by its writer.
void forget(uint64_t token);
// Removes every file still pending: called just before an _exit. (A file renamed meanwhile
// is whole at its new name already: its old name is gone, and nothing is removed.)
void remove_all();

} // namespace pending_files
