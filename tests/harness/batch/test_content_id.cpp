// Content ID: stable across write and read, blind to outputs and file bytes, and changed by any
// dataset byte or attribute.
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <set>

#include "harness/batch/batch_io.hpp"
#include "harness/batch/content_id.hpp"
#include "tests/catch.hpp"
#include "tests/harness/batch/small_batch.hpp"

using namespace dsa;

TEST_CASE("content ID: 16 hex characters, stable across write and read", "[content_id]") {
  const Batch b = test::small_batch(31);
  const std::string id = content_id(b);
  REQUIRE(id.size() == 16);
  for (char c : id) REQUIRE(std::isxdigit(static_cast<unsigned char>(c)));
  REQUIRE(content_id(b) == id);

  const std::string path = (std::filesystem::temp_directory_path() / ("dsa-test-cid-" + std::to_string(::getpid()) + ".h5")).string();
  write_batch(path, b);
  const Batch back = read_batch(path);
  std::filesystem::remove(path);
  REQUIRE(content_id(back) == id);
}

TEST_CASE("content ID: outputs, path and layer order in memory do not count", "[content_id]") {
  const Batch b = test::small_batch(32);
  Batch other = b;
  other.outputs.clear();
  other.path = "/somewhere/else.h5";
  std::swap(other.layers[0], other.layers[2]);
  REQUIRE(content_id(other) == content_id(b));
  REQUIRE(content_id(test::small_batch(33)) != content_id(b));
}

TEST_CASE("content ID: every dataset byte and every attribute changes it", "[content_id]") {
  const Batch base = test::small_batch(34);
  const std::vector<std::pair<std::string, std::function<void(Batch&)>>> edits = {
      {"num_rows", [](Batch& b) { b.num_rows[1] += 1; }},
      {"compressed_len", [](Batch& b) { b.compressed_len[1] -= 1; }},
      {"page_table", [](Batch& b) { std::swap(b.page_table[0], b.page_table[1]); }},
      {"page_table width", [](Batch& b) {  // same entries, other shape
         b.table_width = 10;
         b.page_table.resize(60);
       }},
      {"tail_rows", [](Batch& b) { b.tail_rows[0] = 0; }},
      {"tail_rows absent", [](Batch& b) { b.tail_rows.clear(); }},
      {"compress_len", [](Batch& b) { b.compress_len[6] -= 1; }},
      {"pool last byte", [](Batch& b) { b.pool.back() ^= 1; }},
      {"pool first byte", [](Batch& b) { b.pool.front() ^= 0x80; }},
      {"q", [](Batch& b) { b.layers[1].q[100] ^= 0x10; }},
      {"q_scale", [](Batch& b) { b.layers[2].q_scale[3] += 1; }},
      {"weights", [](Batch& b) { b.layers[0].weights[7] = std::nextafter(b.layers[0].weights[7], 1.0f); }},
      {"weights zero", [](Batch& b) { b.layers[0].weights[8] = 0.0f; }},
      {"role", [](Batch& b) { b.layers[2].role = Role::plain; }},
      {"layer id", [](Batch& b) { b.layers[2].id = 32; }},
      {"topk", [](Batch& b) { b.topk = 1024; }},
      {"page_size", [](Batch& b) { b.page_size = 32; }},
      {"compress_ratio", [](Batch& b) { b.compress_ratio = 2; }},
      {"source_layer", [](Batch& b) { b.source_layer = -1; }},
      {"origin", [](Batch& b) { b.origin = "captured"; }},
      {"description", [](Batch& b) { b.description += "."; }},
  };
  std::set<std::string> ids = {content_id(base)};
  for (const auto& [name, edit] : edits) {
    INFO("edit: " << name);
    Batch b = base;
    edit(b);
    REQUIRE(ids.insert(content_id(b)).second);  // differs from the base and from every other edit
  }
  REQUIRE(ids.size() == edits.size() + 1);
}
