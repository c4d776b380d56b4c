#include "core/path.hpp"

namespace dsa {

const char* path_name(PathKind path) {
  switch (path) {
    case PathKind::sparse: return "sparse";
    case PathKind::mask: return "mask";
    case PathKind::exact: return "exact";
  }
  return "?";
}

std::optional<PathKind> path_from_name(const std::string& name) {
  for (PathKind p : {PathKind::sparse, PathKind::mask, PathKind::exact})
    if (name == path_name(p)) return p;
  return std::nullopt;
}

std::string reference_for(PathKind path) { return std::string("reference-") + path_name(path); }

}  // namespace dsa
