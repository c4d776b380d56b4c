#pragma once
// plugin:PATH — an external implementation in a shared library (include/dsa_harness/plugin.h).
// The library runs in a child process (`dsa-harness plugin-host PATH BATCH`, plugin_host.cpp),
// so a plugin that crashes, returns malformed outputs or speaks another ABI version fails its
// own run with a message naming it, and the replay keeps every other implementation's results.
#include <stdexcept>
#include <string>

#include "core/implementation.hpp"

namespace dsa {

// A failure of one plugin run. Not an InputError: the replay reports it as that run's failure
// (a case with layer "run") and goes on.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `library` is PATH (without "plugin:"). Nothing is loaded before the run.
ImplementationPtr make_plugin(const std::string& library);

}  // namespace dsa
