// Output guards: an output that is an input or not a regular file is refused, a report folder
// has one writer at a time, and temp files of dead processes are removed while live ones stay.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "core/files.hpp"
#include "tests/catch.hpp"

using namespace dsa;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& tag) {
  const fs::path p = fs::temp_directory_path() / ("dsa-files-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string output_error(const std::string& out, const std::vector<std::string>& inputs) {
  try {
    check_output_file(out, inputs, "-o");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A pid that certainly belongs to no running process: a child that has exited and been reaped.
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return long(child);
}

}  // namespace

TEST_CASE("files: an output that is an input, a device or a folder is refused") {
  const fs::path dir = scratch("out");
  const std::string in = (dir / "batch.h5").string();
  std::ofstream(in) << "x";
  fs::create_hard_link(in, dir / "same.h5");
  CHECK(output_error((dir / "new.h5").string(), {in}).empty());
  CHECK(output_error(in, {in}).find("is the input") != std::string::npos);
  // Another path to the same inode is the same file.
  CHECK(output_error((dir / "same.h5").string(), {in}).find("refusing to overwrite an input") != std::string::npos);
  CHECK(output_error((dir / "." / "batch.h5").string(), {in}).find("is the input") != std::string::npos);
  CHECK(output_error("/dev/null", {}).find("/dev/null: -o: exists and is not a regular file") == 0);
  CHECK(output_error(dir.string(), {}).find("not a regular file") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("files: a folder lock admits one holder and names the busy folder") {
  const fs::path dir = scratch("lock");
  {
    FolderLock first(dir.string());
    std::string message;
    try {
      FolderLock second(dir.string());
    } catch (const InputError& e) {
      message = e.what();
    }
    CHECK(message.find(dir.string() + ": -o: is busy") == 0);
  }
  CHECK_NOTHROW(FolderLock(dir.string()));  // released with its holder
  fs::remove_all(dir);
}

TEST_CASE("files: temp files of dead processes are removed, those of live ones stay") {
  const fs::path dir = scratch("tmp");
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(::getpid());
  for (const std::string& name : std::vector<std::string>{"report.json.tmp-" + dead, "x.h5.tmp-" + dead, "report.json.tmp-" + live,
                                  "notes.tmp-abc", "keep.h5"})
    std::ofstream(dir / name) << "x";
  CHECK(remove_stale_temp_files(dir.string()) == 2);
  CHECK_FALSE(fs::exists(dir / ("report.json.tmp-" + dead)));
  CHECK_FALSE(fs::exists(dir / ("x.h5.tmp-" + dead)));
  CHECK(fs::exists(dir / ("report.json.tmp-" + live)));
  CHECK(fs::exists(dir / "notes.tmp-abc"));
  CHECK(fs::exists(dir / "keep.h5"));
  CHECK(remove_stale_temp_files((dir / "missing").string()) == 0);
  fs::remove_all(dir);
}
