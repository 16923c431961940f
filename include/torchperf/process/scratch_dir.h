// This run's own temporary folder, for the files torchperf hands its children (inputs, outputs,
// logs): one per process and per user, made private on first use, removed when the process ends.
// A fixed name shared by every run would belong to whichever user made it first.
#pragma once

#include <filesystem>
#include <string>

namespace torchperf {

// $TMPDIR/torchperf-<user>-XXXXXX, mode 0700, made with mkdtemp on the first call. RuntimeFailure
// naming the folder and the OS's reason when it cannot be made.
const std::filesystem::path& scratch_dir();

// A path in it: NAME as given (callers make names unique within the run).
std::string scratch_path(const std::string& name);

// Keep the folder when the process ends: an error message named a file in it (a child's log).
void keep_scratch_dir();

// Keep it only when `message` names it: an error that names no file in it leaves nothing behind.
void keep_scratch_dir_if_named(const std::string& message);

}  // namespace torchperf
