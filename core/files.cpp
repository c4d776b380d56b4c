#include "core/files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/errors.hpp"

namespace dsa {

namespace fs = std::filesystem;

void check_output_file(const std::string& output, const std::vector<std::string>& inputs, const std::string& option) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return;  // a new file: nothing to protect
  if (!S_ISREG(out.st_mode))
    throw InputError(output, option, "exists and is not a regular file (a device, folder or pipe); refusing to replace it");
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      throw InputError(output, option, "is the input " + input + "; refusing to overwrite an input");
  }
}

namespace {

// The pid of "<name>.tmp-<pid>", or -1 when the name is not one of our temp files.
long temp_file_pid(const std::string& name) {
  const size_t at = name.rfind(".tmp-");
  if (at == std::string::npos || at == 0 || at + 5 >= name.size()) return -1;
  long pid = 0;
  for (size_t i = at + 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 1000000000L) return -1;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid > 0 ? pid : -1;
}

bool process_gone(long pid) { return ::kill(pid_t(pid), 0) != 0 && errno == ESRCH; }

}  // namespace

int remove_stale_temp_files(const std::string& folder) {
  std::error_code ec;
  int removed = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(folder.empty() ? "." : folder, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const long pid = temp_file_pid(e.path().filename().string());
    if (pid > 0 && process_gone(pid) && fs::remove(e.path(), ec)) ++removed;
  }
  return removed;
}

FolderLock::FolderLock(const std::string& folder) {
  const std::string path = folder + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw EnvironmentError(path + ": cannot create the lock file (" + std::strerror(errno) + ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw InputError(folder, "-o", "is busy: another dsa-harness run is writing this folder; wait for it or pick another");
    throw EnvironmentError(path + ": cannot lock (" + std::strerror(err) + ")");
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace dsa
