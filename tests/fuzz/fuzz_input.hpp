#pragma once
// What both libFuzzer targets share: the input written to a scratch file (the readers under test
// take a path, as the CLI gives them one), and the one rule of a finding: the reader may refuse an
// input only with InputError (exit 4, naming file, dataset and rule). Anything else escaping it
// (bad_alloc, a bare std::exception, a crash, a sanitizer report, an allocation beyond
// -malloc_limit_mb) is a finding; libFuzzer reports an escaping exception as a crash (abort).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dsa::fuzz {

// One file per fuzzing process, in TMPDIR, rewritten for every input and removed at exit.
inline const std::string& scratch_file(const char* suffix) {
  static const std::string path = [suffix] {
    const char* dir = std::getenv("TMPDIR");
    std::string p = std::string(dir && *dir ? dir : "/tmp") + "/dsa-fuzz-" + std::to_string(::getpid()) + suffix;
    static std::string for_exit = p;
    std::atexit([] { std::remove(for_exit.c_str()); });
    return p;
  }();
  return path;
}

inline const std::string& write_input(const uint8_t* data, size_t size, const char* suffix) {
  const std::string& path = scratch_file(suffix);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();  // the machine, not the input: stop rather than report nothing
  }
  return path;
}

}  // namespace dsa::fuzz
