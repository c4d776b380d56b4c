#pragma once
// The plugins with one planted defect each (tests/harness/impls/defect_plugin.c), built by
// tests/CMakeLists.txt into DSA_DEFECT_PLUGINS: what test_plugin and test_plugin_host load.
#include <string>

namespace dsa::test {

inline std::string defect(const std::string& name) { return std::string(DSA_DEFECT_PLUGINS) + "/libdsa_defect_" + name + ".so"; }

}  // namespace dsa::test
