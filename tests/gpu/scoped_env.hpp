#pragma once
// Sets an environment variable that the code under test reads (a route or chunk switch) for one
// scope; unset again even when a run throws, so no later test case runs with it.
#include <cstdlib>

namespace dsa::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace dsa::test
