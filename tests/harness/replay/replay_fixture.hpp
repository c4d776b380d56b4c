#pragma once
// What the replay tests share (tests/harness/replay and tests/gpu_devices): a scratch folder and a
// quick replay of the committed fixtures.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "harness/replay/replay.hpp"

namespace dsa::test {

// A fresh folder under the temp directory, removed with the object.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("dsa-replay-" + tag + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string sub(const std::string& name) const { return (path / name).string(); }
};

// The references on a sample of rows of every fixture: cheap, and every comparison kind runs.
// The implementations are pinned so that every host runs the same cases.
inline ReplayOptions quick(const std::string& out) {
  ReplayOptions o;
  o.inputs = {DSA_FIXTURES_DIR};
  o.impls = {"reference-sparse", "reference-mask"};
  o.rows = "6";
  o.seed = 3;
  o.out_dir = out;
  o.progress = nullptr;
  o.shard = Shard{};
  return o;
}

}  // namespace dsa::test
