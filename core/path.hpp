#pragma once
// The path kind of an implementation: which of the indexer's two production paths it computes
// (semantics in docs/semantics.md), or the fp64 exact ranking. One enum with its names, so the
// registry, the reference, the comparison rules and the reports agree on the spelling.
#include <optional>
#include <string>

namespace dsa {

enum class PathKind { sparse, mask, exact };

// "sparse", "mask", "exact".
const char* path_name(PathKind path);
// The inverse of path_name; nullopt for any other string.
std::optional<PathKind> path_from_name(const std::string& name);
// The reference of a path: reference-sparse, reference-mask or reference-exact.
std::string reference_for(PathKind path);

}  // namespace dsa
