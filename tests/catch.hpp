#pragma once
#include <string>
// One include for Catch2 2 (Debian 12) and Catch2 3 (Ubuntu 24.04).
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
// Catch2 3 moved Approx into the Catch namespace; Catch2 2 has it at global scope.
using Catch::Approx;
// String matchers under one name for both versions (Catch2 3 renamed Contains).
namespace dsa_test {
inline auto starts_with(const std::string& s) { return Catch::Matchers::StartsWith(s); }
inline auto contains(const std::string& s) { return Catch::Matchers::ContainsSubstring(s); }
}  // namespace dsa_test
#else
#include <catch2/catch.hpp>
namespace dsa_test {
inline auto starts_with(const std::string& s) { return Catch::Matchers::StartsWith(s); }
inline auto contains(const std::string& s) { return Catch::Matchers::Contains(s); }
}  // namespace dsa_test
#endif
