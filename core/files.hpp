#pragma once
// Guards around the files dsa-harness writes: an output never replaces an input or a device,
// a report folder has one writer at a time, and temp files of killed runs do not pile up.
#include <string>
#include <vector>

namespace dsa {

// Throws InputError(output, option, rule) when `output` exists and is not a regular file (a
// device such as /dev/null, a folder, a pipe) or is one of `inputs` (the same inode, whatever
// the path says). Writes are atomic renames, so either would replace that file.
void check_output_file(const std::string& output, const std::vector<std::string>& inputs, const std::string& option);

// Removes "<name>.tmp-<pid>" files in `folder` whose process no longer runs (a killed write);
// those of live processes stay. Returns how many were removed. Missing folder: 0.
int remove_stale_temp_files(const std::string& folder);

// An exclusive flock on "<folder>/.lock", held for the object's life (and dropped by the kernel
// when the process dies, so a killed run never leaves the folder locked). Throws InputError
// naming the folder when another process holds it, EnvironmentError when it cannot be created.
class FolderLock {
 public:
  explicit FolderLock(const std::string& folder);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace dsa
