#pragma once
// Runs the dsa-harness binary (DSA_BINARY, or DSA_TEST_BINARY when set: to run these tests
// against another build, e.g. to see them fail on a build without the fixes) through the shell
// for the CLI tests: exit code, combined output and wall time.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/scratch_dir.hpp"

namespace dsa::test {

inline const std::string kSmoke = std::string(DSA_FIXTURES_DIR) + "/smoke.h5";  // the smoke fixture

struct CliResult {
  int code = -1;
  std::string output;
  double seconds = 0;
};

// `args` is pasted into a shell command line after the binary: quote paths with spaces.
inline std::string binary() {
  const char* other = std::getenv("DSA_TEST_BINARY");
  return other && *other ? other : DSA_BINARY;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline CliResult cli(const std::string& args, const std::string& env = "") {
  const std::string out = (std::filesystem::temp_directory_path() / ("dsa-cli-out-" + std::to_string(::getpid()))).string();
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system((env + " " + binary() + " " + args + " > '" + out + "' 2>&1").c_str());
  CliResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = read_text(out);
  std::remove(out.c_str());
  return r;
}

// The CLI tests' scratch folder (tests/scratch_dir.hpp).
struct Scratch : ScratchDir {
  explicit Scratch(const std::string& tag) : ScratchDir("dsa-cli-", tag) {}
};

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace dsa::test
