// core/path.cpp: the path kind's names round-trip, and each path has its own reference.
#include "core/path.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("path names round-trip and nothing else parses", "[core][path]") {
  for (PathKind p : {PathKind::sparse, PathKind::mask, PathKind::exact}) {
    INFO(path_name(p));
    REQUIRE(path_from_name(path_name(p)).has_value());
    CHECK(*path_from_name(path_name(p)) == p);
  }
  CHECK(std::string(path_name(PathKind::mask)) == "mask");
  CHECK_FALSE(path_from_name("Sparse").has_value());
  CHECK_FALSE(path_from_name("").has_value());
  CHECK_FALSE(path_from_name("reference-sparse").has_value());
}

TEST_CASE("each path names its reference implementation", "[core][path]") {
  CHECK(reference_for(PathKind::sparse) == "reference-sparse");
  CHECK(reference_for(PathKind::mask) == "reference-mask");
  CHECK(reference_for(PathKind::exact) == "reference-exact");
}
