#pragma once
// A batch's identity: SHA-256 (OpenSSL) over its root and layer attributes and its datasets'
// names, shapes and bytes, in a fixed order. Recorded outputs and the file's bytes do not count,
// so the same data gives the same ID however it was written.
#include <string>

#include "core/batch.hpp"

namespace dsa {

// 16 lowercase hex characters (the first 64 bits of the digest).
std::string content_id(const Batch& batch);

}  // namespace dsa
