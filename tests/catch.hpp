#pragma once
// One include for Catch2 2 (Debian 12) and Catch2 3 (Ubuntu 24.04).
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
// Catch2 3 moved Approx into the Catch namespace; Catch2 2 has it at global scope.
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
