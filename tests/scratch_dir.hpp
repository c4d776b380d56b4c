#pragma once
// A fresh folder under the temp directory for one test, removed (quietly) with the object:
// prefix + tag + "-" + pid, so parallel test programs never share one.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace dsa::test {

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir(const std::string& prefix, const std::string& tag)
      : path(std::filesystem::temp_directory_path() / (prefix + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string sub(const std::string& name) const { return (path / name).string(); }
};

}  // namespace dsa::test
