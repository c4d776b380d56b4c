#pragma once
// Sets an environment variable that the code under test reads (a route or chunk switch) for one
// scope; its earlier value (or its absence) comes back even when a run throws, so no later test
// case runs with it and a value given to the whole run holds again after the scope.
#include <cstdlib>
#include <optional>
#include <string>

namespace dsa::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = std::string(old);
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace dsa::test
