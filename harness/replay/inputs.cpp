#include "harness/replay/inputs.hpp"

#include <algorithm>
#include <filesystem>

#include "core/errors.hpp"

namespace dsa {

namespace fs = std::filesystem;

uint64_t file_size(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : uint64_t(size);
}

std::string default_fixtures_dir() { return std::string(DSA_SOURCE_DIR) + "/fixtures"; }

std::vector<std::string> fixture_files(const std::string& dir) {
  std::vector<std::string> files = expand_inputs({dir});
  for (std::string& f : files) {
    const fs::path recorded = fs::path(dir) / "recorded" / fs::path(f).filename();
    std::error_code ec;
    if (fs::is_regular_file(recorded, ec)) f = recorded.string();
  }
  return files;
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& args) {
  if (args.empty()) return fixture_files(default_fixtures_dir());
  std::vector<std::string> files;
  for (const std::string& p : args) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const fs::directory_entry& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() == ".h5") found.push_back(e.path().string());
      if (found.empty()) throw InputError(p, "(folder)", "holds no *.h5 batch files");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      throw InputError(p, "(file)", "no such file or folder");
    }
  }
  return files;
}

}  // namespace dsa
