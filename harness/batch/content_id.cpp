#include "harness/batch/content_id.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/constants.hpp"

namespace dsa {
namespace {

// Feeds tagged items to SHA-256: every item is "kind name shape\n" followed by its bytes, so
// moving bytes between datasets or renaming one changes the digest.
class Hasher {
 public:
  Hasher() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("content ID: OpenSSL SHA-256 is not available");
  }
  void text(const std::string& s) { EVP_DigestUpdate(ctx_.get(), s.data(), s.size()); }
  void attr(const std::string& name, int64_t value) { text("attr " + name + " int " + std::to_string(value) + "\n"); }
  void attr(const std::string& name, const std::string& value) {
    text("attr " + name + " str " + std::to_string(value.size()) + "\n");
    text(value);
  }
  template <class T>
  void dataset(const std::string& name, const char* dtype, const std::vector<int64_t>& dims, const std::vector<T>& v) {
    std::string head = "dataset " + name + " " + dtype + " [";
    for (size_t i = 0; i < dims.size(); ++i) head += (i ? "," : "") + std::to_string(dims[i]);
    text(head + "] " + std::to_string(v.size() * sizeof(T)) + "\n");
    // Little-endian hosts only (x86-64, aarch64): the bytes equal the file's little-endian bytes.
    if (!v.empty()) EVP_DigestUpdate(ctx_.get(), v.data(), v.size() * sizeof(T));
  }
  std::string hex16() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &len);
    char out[17];
    for (int i = 0; i < 8; ++i) std::snprintf(out + 2 * i, 3, "%02x", digest[i]);
    return std::string(out, 16);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

}  // namespace

std::string content_id(const Batch& b) {
  Hasher h;
  h.text("dsa-indexer-batch content id v1\n");
  h.attr("format", "dsa-indexer-batch");
  h.attr("format_version", b.format_version);
  h.attr("heads", kHeads);
  h.attr("head_dim", kHeadDim);
  h.attr("block_size", kBlockSize);
  h.attr("topk_blocks", kTopkBlocks);
  h.attr("topk", b.topk);
  h.attr("page_size", b.page_size);
  h.attr("compress_ratio", b.compress_ratio);
  h.attr("source_layer", b.source_layer);
  h.attr("origin", b.origin);
  h.attr("description", b.description);
  const int64_t q = b.requests(), r = b.rows();
  h.dataset("/requests/num_rows", "int32", {q}, b.num_rows);
  h.dataset("/requests/compressed_len", "int32", {q}, b.compressed_len);
  h.dataset("/requests/page_table", "int32", {q, b.table_width}, b.page_table);
  if (!b.tail_rows.empty()) h.dataset("/requests/tail_rows", "int32", {q}, b.tail_rows);
  h.dataset("/rows/compress_len", "int32", {r}, b.compress_len);
  h.dataset("/index_k/pool", "uint8", {b.pages, int64_t(b.page_size) * kSlotBytes}, b.pool);
  std::vector<const Layer*> layers;
  for (const Layer& l : b.layers) layers.push_back(&l);
  std::sort(layers.begin(), layers.end(), [](const Layer* x, const Layer* y) { return x->id < y->id; });
  for (const Layer* l : layers) {
    const std::string g = "/layers/" + std::to_string(l->id);
    h.attr(g + "@role", role_name(l->role));
    h.dataset(g + "/q", "uint8", {r, kHeads, kPackedDim}, l->q);
    h.dataset(g + "/q_scale", "uint8", {r, kHeads, kScaleGroups}, l->q_scale);
    h.dataset(g + "/weights", "float32", {r, kHeads}, l->weights);
  }
  return h.hex16();
}

}  // namespace dsa
