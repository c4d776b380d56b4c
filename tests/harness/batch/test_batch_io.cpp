// Batch files: round trip of every dataset and attribute, byte-identical writes, result files, and
// malformed files (each with its own message, and exit 4 from `dsa-harness validate`).
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <thread>

#include "harness/batch/batch_io.hpp"
#include "harness/batch/batch_validate.hpp"
#include "harness/batch/content_id.hpp"
#include "core/errors.hpp"
#include "tests/catch.hpp"
#include "tests/harness/batch/batch_equal.hpp"
#include "tests/harness/batch/small_batch.hpp"

namespace fs = std::filesystem;
using namespace dsa;

namespace {

// One folder per test process, removed when the process ends.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("dsa-test-batch-io-" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

std::string scratch(const std::string& name) { return (scratch_dir() / name).string(); }

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The message read_batch throws, or "" when the file reads fine.
std::string read_error(const std::string& path) {
  try {
    read_batch(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The message of whatever `fn` throws, or "" when it does not throw.
template <class F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int cli_validate(const std::string& path) {
  const std::string cmd = std::string(DSA_BINARY) + " validate '" + path + "' >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- raw HDF5 edits that break one rule of a valid file ----

struct RawFile {
  hid_t id;
  explicit RawFile(const std::string& path) : id(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) { REQUIRE(id >= 0); }
  ~RawFile() { H5Fclose(id); }
};

// Stored as `type` (int64 by default, as h5py writes Python ints).
void set_int_attr(const std::string& file, const std::string& obj, const std::string& name, int64_t value,
                  hid_t type = H5T_STD_I64LE) {
  RawFile f(file);
  H5Adelete_by_name(f.id, obj.c_str(), name.c_str(), H5P_DEFAULT);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate_by_name(f.id, obj.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(H5Awrite(attr, H5T_NATIVE_INT64, &value) >= 0);
  H5Aclose(attr);
  H5Sclose(space);
}

// Variable-length string; UTF-8 is how h5py writes a Python str (the reader must take every kind).
void set_string_attr(const std::string& file, const std::string& obj, const std::string& name, const std::string& value,
                     H5T_cset_t cset = H5T_CSET_ASCII) {
  RawFile f(file);
  H5Adelete_by_name(f.id, obj.c_str(), name.c_str(), H5P_DEFAULT);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, cset);
  hid_t attr = H5Acreate_by_name(f.id, obj.c_str(), name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = value.c_str();
  REQUIRE(H5Awrite(attr, type, &text) >= 0);
  H5Aclose(attr);
  H5Tclose(type);
  H5Sclose(space);
}

// Reads a whole dataset, lets `edit` change it, writes it back in place.
template <class T>
void edit_dataset(const std::string& file, const std::string& path, hid_t mem_type, std::function<void(std::vector<T>&)> edit) {
  RawFile f(file);
  hid_t ds = H5Dopen2(f.id, path.c_str(), H5P_DEFAULT);
  REQUIRE(ds >= 0);
  hid_t space = H5Dget_space(ds);
  std::vector<T> data(size_t(H5Sget_simple_extent_npoints(space)));
  REQUIRE(H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0);
  edit(data);
  REQUIRE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0);
  H5Sclose(space);
  H5Dclose(ds);
}

void delete_link(const std::string& file, const std::string& path) {
  RawFile f(file);
  REQUIRE(H5Ldelete(f.id, path.c_str(), H5P_DEFAULT) >= 0);
}

void move_link(const std::string& file, const std::string& from, const std::string& to) {
  RawFile f(file);
  REQUIRE(H5Lmove(f.id, from.c_str(), f.id, to.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
}

// Replaces (or adds) a dataset of another type or shape, filled with `fill` bytes.
void replace_dataset(const std::string& file, const std::string& path, hid_t type, std::vector<hsize_t> dims, uint8_t fill) {
  RawFile f(file);
  if (H5Lexists(f.id, path.c_str(), H5P_DEFAULT) > 0) REQUIRE(H5Ldelete(f.id, path.c_str(), H5P_DEFAULT) >= 0);
  hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  hid_t ds = H5Dcreate2(f.id, path.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  size_t n = H5Tget_size(type);
  for (hsize_t d : dims) n *= d;
  std::vector<uint8_t> bytes(n, fill);
  REQUIRE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0);
  H5Dclose(ds);
  H5Sclose(space);
}

// ---- comparisons ----

void require_same_results(const Results& a, const Results& b) {
  REQUIRE(a.name == b.name);
  REQUIRE(a.implementation == b.implementation);
  REQUIRE(a.device == b.device);
  REQUIRE(a.notes == b.notes);
  REQUIRE(a.rows_done == b.rows_done);
  REQUIRE(a.blocks == b.blocks);
  REQUIRE(a.layers.size() == b.layers.size());
  for (const auto& [id, la] : a.layers) {
    REQUIRE(b.layers.count(id) == 1);
    const LayerResult& lb = b.layers.at(id);
    REQUIRE(la.positions == lb.positions);
    REQUIRE(la.tail_positions == lb.tail_positions);
    REQUIRE(la.dense_scores == lb.dense_scores);
    REQUIRE(la.sparse_scores == lb.sparse_scores);
  }
}

void require_same_batch(const Batch& a, const Batch& b) {
  test::require_same_inputs(a, b);
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (const auto& [name, res] : a.outputs) {
    REQUIRE(b.outputs.count(name) == 1);
    require_same_results(res, b.outputs.at(name));
  }
  REQUIRE(a.total_tail_rows == b.total_tail_rows);
}

}  // namespace

TEST_CASE("batch file: every dataset and attribute round-trips", "[batch_io]") {
  const Batch b = test::small_batch(11);
  REQUIRE(b.total_tail_rows == 3);
  REQUIRE(b.outputs.at("reference-sparse").layers.at(24).tail_positions.size() == 3 * 512);
  const std::string path = scratch("roundtrip.h5");
  write_batch(path, b);
  const Batch back = read_batch(path);
  require_same_batch(b, back);
  REQUIRE(back.path == path);
  REQUIRE(back.request_start == b.request_start);  // finalize() ran
  for (const auto& entry : fs::directory_iterator(scratch_dir()))  // atomic write left no temp file
    REQUIRE(entry.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("batch file: attributes stored the way h5py and other writers store them read the same", "[batch_io]") {
  Batch b = test::small_batch(19);
  b.description = "captured: engine step 7 on H200 \xe2\x80\x94 \xc2\xb5s timings";  // UTF-8 text
  const std::string path = scratch("attr-forms.h5");
  write_batch(path, b);
  for (const char* name : {"format", "origin", "description"}) {
    const std::string value = name[0] == 'f' ? "dsa-indexer-batch" : name[0] == 'o' ? b.origin : b.description;
    set_string_attr(path, "/", name, value, H5T_CSET_UTF8);
  }
  for (const Layer& l : b.layers)
    set_string_attr(path, "/layers/" + std::to_string(l.id), "role", role_name(l.role), H5T_CSET_UTF8);
  const struct { const char* name; int64_t value; hid_t type; } ints[] = {
      {"format_version", b.format_version, H5T_STD_U8LE}, {"heads", 32, H5T_STD_I16BE},
      {"head_dim", 128, H5T_STD_U16LE}, {"block_size", 8, H5T_STD_I8LE}, {"topk_blocks", 2048, H5T_STD_U32BE},
      {"topk", b.topk, H5T_STD_I64LE}, {"page_size", b.page_size, H5T_STD_U64LE},
      {"compress_ratio", b.compress_ratio, H5T_STD_U8LE}, {"source_layer", b.source_layer, H5T_STD_I8LE}};
  for (const auto& a : ints) set_int_attr(path, "/", a.name, a.value, a.type);
  const Batch back = read_batch(path);
  require_same_batch(b, back);
  REQUIRE(content_id(back) == content_id(b));  // the ID hashes values, not storage forms
  REQUIRE(cli_validate(path) == 0);
}

TEST_CASE("batch file: outputs are stored under their map key", "[batch_io]") {
  Batch b = test::small_batch(18);
  b.outputs["engine"] = b.outputs.at("reference-sparse");  // its Results::name stays "reference-sparse"
  const std::string path = scratch("keys.h5");
  write_batch(path, b);
  const Batch back = read_batch(path);
  REQUIRE(back.outputs.size() == 2);
  REQUIRE(back.outputs.at("engine").name == "engine");
  REQUIRE(back.outputs.at("engine").rows_done == b.outputs.at("engine").rows_done);
  REQUIRE(back.outputs.at("engine").layers.at(24).sparse_scores == b.outputs.at("engine").layers.at(24).sparse_scores);
}

TEST_CASE("batch file: a recorded group's harness and recorded_at round-trip, and are absent unless set", "[batch_io]") {
  Batch b = test::small_batch(17);
  const std::string plain = scratch("provenance-0.h5"), stamped = scratch("provenance-1.h5");
  write_batch(plain, b);
  Results& r = b.outputs.at("reference-sparse");
  r.implementation = "gpu-sparse";
  r.device = "NVIDIA H200 (sm_90, 132 SMs)";
  r.harness = "dsa-harness 0.1.0 (commit 0123456789ab)";
  r.recorded_at = "2026-12-01T05:00:00Z";
  write_batch(stamped, b);
  const Results back = read_batch(stamped).outputs.at("reference-sparse");
  CHECK(back.implementation == r.implementation);
  CHECK(back.device == r.device);
  CHECK(back.harness == r.harness);
  CHECK(back.recorded_at == r.recorded_at);
  const Results none = read_batch(plain).outputs.at("reference-sparse");
  CHECK(none.harness.empty());
  CHECK(none.recorded_at.empty());
  // Files written without them keep their bytes (the committed golden results among them).
  CHECK(file_bytes(plain).find("recorded_at") == std::string::npos);
  CHECK(file_bytes(stamped).find("recorded_at") != std::string::npos);
}

TEST_CASE("batch file: a batch without tails, outputs or layers round-trips", "[batch_io]") {
  Batch b = test::small_batch(12, false);
  b.tail_rows.clear();
  b.layers.erase(b.layers.begin() + 1, b.layers.end());  // only the source
  b.finalize();
  const std::string path = scratch("plain.h5");
  write_batch(path, b);
  Batch back = read_batch(path);
  require_same_batch(b, back);
  REQUIRE(back.tail_rows.empty());
  REQUIRE(back.outputs.empty());
}

TEST_CASE("batch file: the same Batch gives a byte-identical file", "[batch_io]") {
  const Batch b = test::small_batch(13);
  const std::string first = scratch("same-1.h5"), second = scratch("same-2.h5"), third = scratch("same-3.h5");
  write_batch(first, b);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // timestamps would differ now
  write_batch(second, b);
  write_batch(third, read_batch(first));  // what the reader returns is the same Batch
  const std::string bytes = file_bytes(first);
  REQUIRE(bytes.size() > 1000);
  REQUIRE(bytes == file_bytes(second));
  REQUIRE(bytes == file_bytes(third));
  Batch other = b;
  other.layers[1].weights[5] = -other.layers[1].weights[5];
  write_batch(second, other);
  REQUIRE(bytes != file_bytes(second));
}

TEST_CASE("batch file: writing an invalid batch or into a missing folder fails cleanly", "[batch_io]") {
  Batch b = test::small_batch(14);
  b.compress_len[2] = 41;
  const std::string path = scratch("never.h5");
  REQUIRE_THROWS_AS(write_batch(path, b), InputError);
  REQUIRE_FALSE(fs::exists(path));
  REQUIRE_THROWS_AS(write_batch(scratch("no/such/folder/x.h5"), test::small_batch(14)), EnvironmentError);
}

TEST_CASE("result files: round trip, batch ID check, validation", "[batch_io]") {
  const Batch b = test::small_batch(15, false);
  std::mt19937 rng(3);
  std::vector<Results> results = {test::small_results(b, rng, "gpu-sparse"), test::small_results(b, rng, "a-first")};
  const std::string path = scratch("results.h5");
  write_results(path, b, results);
  const std::vector<Results> back = read_results(path, b);
  REQUIRE(back.size() == 2);
  require_same_results(results[1], back[0]);  // sorted by name
  require_same_results(results[0], back[1]);

  // Rows not done are not stored: their scores come back empty, positions as padding.
  REQUIRE(back[1].rows_done[1] == 0);
  REQUIRE(back[1].layers.at(20).dense_scores[1].empty());
  REQUIRE(back[1].layers.at(20).dense_scores[3].size() == 100);

  SECTION("a result file of another batch is refused, naming the attribute") {
    const Batch other = test::small_batch(16, false);
    try {
      read_results(path, other);
      FAIL("read_results accepted a result file of another batch");
    } catch (const InputError& e) {
      REQUIRE(std::string(e.what()).find("attribute batch: is " + content_id(b)) != std::string::npos);
    }
  }
  SECTION("a batch file is not a result file") {
    write_batch(scratch("batch-not-results.h5"), b);
    REQUIRE(contains(error_of([&] { read_results(scratch("batch-not-results.h5"), b); }), "attribute batch: is missing"));
  }
  SECTION("invalid results are not written") {
    results[0].layers[24].positions[0] = 40;  // row 0 has L = 0
    REQUIRE_THROWS_AS(write_results(scratch("bad-results.h5"), b, results), InputError);
    REQUIRE_FALSE(fs::exists(scratch("bad-results.h5")));
  }
  SECTION("a done row whose dense scores are missing is refused") {
    results[0].layers[20].dense_scores[0 + 3].clear();
    REQUIRE(contains(error_of([&] { write_results(scratch("bad-results.h5"), b, results); }),
                     "/outputs/gpu-sparse/20/dense_scores: row 3 has 0 scores, not 100"));
  }
}

TEST_CASE("result files: unwritten score rows cost nothing on disk", "[batch_io]") {
  const Batch b = test::small_batch(17, false);
  std::mt19937 rng(5);
  Results res = test::small_results(b, rng, "sampled");
  const std::string all = scratch("scores-all.h5"), few = scratch("scores-few.h5");
  write_results(all, b, {res});
  for (size_t r = 0; r < res.rows_done.size(); ++r)  // keep only row 6 done
    if (r != 6) {
      res.rows_done[r] = 0;
      res.layers[20].dense_scores[r].clear();
      res.layers[24].sparse_scores[r].clear();
    }
  write_results(few, b, {res});
  REQUIRE(fs::file_size(few) < fs::file_size(all));
  const auto back = read_results(few, b);
  REQUIRE(back[0].layers.at(24).sparse_scores[6] == res.layers[24].sparse_scores[6]);
}

// ---- malformed files: each breaks one rule and must name it ----

struct Malformed {
  const char* what;
  std::function<void(const std::string&)> br;
  const char* message;
};

TEST_CASE("malformed batch files: each gets its own error and exit 4", "[batch_io]") {
  const Batch good = test::small_batch(21);
  const std::string good_path = scratch("good.h5");
  write_batch(good_path, good);
  REQUIRE(read_error(good_path).empty());
  REQUIRE(cli_validate(good_path) == 0);
  const std::string pos24 = "/outputs/reference-sparse/24/positions";

  const std::vector<Malformed> cases = {
      {"format", [](auto& f) { set_string_attr(f, "/", "format", "dsa-other"); }, "attribute format: 'dsa-other' is not 'dsa-indexer-batch'"},
      {"version", [](auto& f) { set_int_attr(f, "/", "format_version", 2); }, "attribute format_version: 2 is not supported"},
      {"heads", [](auto& f) { set_int_attr(f, "/", "heads", 16); }, "attribute heads: 16 is not 32 (fixed in v1)"},
      {"block_size", [](auto& f) { set_int_attr(f, "/", "block_size", 16); }, "attribute block_size: 16 is not 8"},
      {"topk", [](auto& f) { set_int_attr(f, "/", "topk", 300); }, "attribute topk: 300 is not 512, 1024 or 2048"},
      {"page_size", [](auto& f) { set_int_attr(f, "/", "page_size", 24); }, "attribute page_size: 24 is not a power of two"},
      {"ratio", [](auto& f) { set_int_attr(f, "/", "compress_ratio", 4); }, "attribute compress_ratio: 4 is not 1 or 2"},
      {"origin", [](auto& f) { set_string_attr(f, "/", "origin", "guessed"); }, "attribute origin: 'guessed' is not"},
      {"source_layer", [](auto& f) { set_int_attr(f, "/", "source_layer", 24); }, "attribute source_layer: 24 but the source layer is /layers/20"},
      {"string int", [](auto& f) { set_string_attr(f, "/", "topk", "512"); }, "attribute topk: is not an integer"},
      {"missing attr", [](auto& f) { RawFile r(f); H5Adelete(r.id, "origin"); }, "attribute origin: is missing"},
      {"missing dataset", [](auto& f) { delete_link(f, "/rows/compress_len"); }, "/rows/compress_len: dataset is missing"},
      {"dtype", [](auto& f) { replace_dataset(f, "/requests/num_rows", H5T_STD_I64LE, {3}, 1); }, "/requests/num_rows: dtype is not int32"},
      {"q shape", [](auto& f) { replace_dataset(f, "/layers/24/q", H5T_STD_U8LE, {7, 32, 32}, 3); }, "/layers/24/q: shape [7, 32, 32] is not [7, 32, 64]"},
      {"Q mismatch", [](auto& f) { replace_dataset(f, "/requests/compressed_len", H5T_STD_I32LE, {2}, 1); }, "/requests/compressed_len: shape [2] is not [3]"},
      {"pool shape", [](auto& f) { replace_dataset(f, "/index_k/pool", H5T_STD_U8LE, {26, 64 * 68}, 5); }, "/index_k/pool: shape [26, 4352] does not have P*68 = 1088"},
      {"R != sum", [](auto& f) { edit_dataset<int32_t>(f, "/requests/num_rows", H5T_NATIVE_INT32, [](auto& v) { v[2] = 3; }); }, "/rows/compress_len: has 7 rows but sum(/requests/num_rows) is 6"},
      {"negative rows", [](auto& f) { edit_dataset<int32_t>(f, "/requests/num_rows", H5T_NATIVE_INT32, [](auto& v) { v[1] = -1; }); }, "/requests/num_rows: request 1 has a negative row count"},
      {"L > lc", [](auto& f) { edit_dataset<int32_t>(f, "/rows/compress_len", H5T_NATIVE_INT32, [](auto& v) { v[2] = 41; }); }, "/rows/compress_len: row 2 has L = 41, outside [0, lc = 40]"},
      {"page out of pool", [](auto& f) { edit_dataset<int32_t>(f, "/requests/page_table", H5T_NATIVE_INT32, [](auto& v) { v[1] = 26; }); }, "/requests/page_table: request 0 page 1 is 26, outside the pool's [0, 26)"},
      {"page -1 in use", [](auto& f) { edit_dataset<int32_t>(f, "/requests/page_table", H5T_NATIVE_INT32, [](auto& v) { v[20] = -1; }); }, "/requests/page_table: request 1 page 0 is -1"},
      {"table too narrow", [](auto& f) { edit_dataset<int32_t>(f, "/requests/compressed_len", H5T_NATIVE_INT32, [](auto& v) { v[2] = 321; }); }, "/requests/page_table: request 2 needs 21 pages for 321 positions but the table has 20 columns"},
      {"tail_rows", [](auto& f) { edit_dataset<int32_t>(f, "/requests/tail_rows", H5T_NATIVE_INT32, [](auto& v) { v[1] = 1; }); }, "/requests/tail_rows: request 1 has 1 tail rows, outside [0, num_rows = 0]"},
      {"q_scale 0", [](auto& f) { edit_dataset<uint8_t>(f, "/layers/28/q_scale", H5T_NATIVE_UINT8, [](auto& v) { v[4 * 32 * 3 + 4 * 5 + 2] = 0; }); }, "/layers/28/q_scale: ue8m0 byte 0 (not in 1..254) at row 3 head 5"},
      {"q_scale 255", [](auto& f) { edit_dataset<uint8_t>(f, "/layers/20/q_scale", H5T_NATIVE_UINT8, [](auto& v) { v[1] = 255; }); }, "/layers/20/q_scale: ue8m0 byte 255"},
      {"pool scale", [&good](auto& f) {
         // Request 2, position 17: page table entry 1, slot 1, scale byte 3.
         const int64_t page = good.page_table[2 * 20 + 1];
         edit_dataset<uint8_t>(f, "/index_k/pool", H5T_NATIVE_UINT8, [page](auto& v) { v[size_t(page * 1088 + 16 * 64 + 1 * 4 + 3)] = 255; });
       }, "/index_k/pool: ue8m0 scale byte 255 (not in 1..254) at request 2 position 17"},
      {"weights NaN", [](auto& f) { edit_dataset<float>(f, "/layers/24/weights", H5T_NATIVE_FLOAT, [](auto& v) { v[32 * 4 + 9] = NAN; }); }, "/layers/24/weights: row 4 head 9 is not finite"},
      {"weights inf", [](auto& f) { edit_dataset<float>(f, "/layers/20/weights", H5T_NATIVE_FLOAT, [](auto& v) { v[0] = INFINITY; }); }, "/layers/20/weights: row 0 head 0 is not finite"},
      {"role", [](auto& f) { set_string_attr(f, "/layers/28", "role", "observer"); }, "/layers/28 attribute role: 'observer' is not source, consumer or plain"},
      {"layer id", [](auto& f) { move_link(f, "/layers/28", "/layers/late"); }, "/layers/late: layer name is not a decimal integer id"},
      {"no source", [](auto& f) { set_string_attr(f, "/layers/20", "role", "plain"); }, "/layers: a consumer layer but no source layer"},
      {"two sources", [](auto& f) { set_string_attr(f, "/layers/28", "role", "source"); }, "/layers/28 attribute role: a second source layer"},
      {"no layers group", [](auto& f) { delete_link(f, "/layers"); }, "/layers: is missing or not a group"},
      {"position >= L", [pos24](auto& f) { edit_dataset<int32_t>(f, pos24, H5T_NATIVE_INT32, [](auto& v) { v[512 * 2] = 40; }); }, "/outputs/reference-sparse/24/positions: row 2 holds 40, outside [-1, L = 40)"},
      {"positions order", [pos24](auto& f) { edit_dataset<int32_t>(f, pos24, H5T_NATIVE_INT32, [](auto& v) { std::swap(v[512 * 3], v[512 * 3 + 1]); }); }, "/outputs/reference-sparse/24/positions: row 3 is not strictly ascending at column 1"},
      {"position after pad", [pos24](auto& f) { edit_dataset<int32_t>(f, pos24, H5T_NATIVE_INT32, [](auto& v) { v[512 * 3 + 511] = 99; }); }, "row 3 has position 99 after -1 padding"},
      {"block id", [](auto& f) { edit_dataset<int32_t>(f, "/outputs/reference-sparse/blocks", H5T_NATIVE_INT32, [](auto& v) { v[2048 * 2 + 5] = 5000; }); }, "/outputs/reference-sparse/blocks: row 2 holds block 5000, outside [0, ceil(L/8) = 5)"},
      {"rows_done 2", [](auto& f) { edit_dataset<uint8_t>(f, "/outputs/reference-sparse/rows_done", H5T_NATIVE_UINT8, [](auto& v) { v[0] = 2; }); }, "/outputs/reference-sparse/rows_done: row 0 is 2, not 0 or 1"},
      {"tail rows count", [](auto& f) { replace_dataset(f, "/outputs/reference-sparse/24/tail_positions", H5T_STD_I32LE, {2, 512}, 0xff); }, "/outputs/reference-sparse/24/tail_positions: shape [2, 512] is not [3, 512]"},
      {"tail on source", [](auto& f) { replace_dataset(f, "/outputs/reference-sparse/20/tail_positions", H5T_STD_I32LE, {3, 512}, 0xff); }, "/outputs/reference-sparse/20/tail_positions: only consumer layers have tail picks"},
      {"output unknown layer", [](auto& f) { move_link(f, "/outputs/reference-sparse/24", "/outputs/reference-sparse/30"); }, "/outputs/reference-sparse/30: layer 30 is not in the batch"},
      {"dense too narrow", [](auto& f) { replace_dataset(f, "/outputs/reference-sparse/20/dense_scores", H5T_IEEE_F32LE, {7, 200}, 0); }, "/outputs/reference-sparse/20/dense_scores: shape [7, 200] is not [R = 7, W >= 300]"},
      {"sparse dtype", [](auto& f) { replace_dataset(f, "/outputs/reference-sparse/24/sparse_scores", H5T_IEEE_F32LE, {7, 16384}, 0); }, "/outputs/reference-sparse/24/sparse_scores: dtype is not uint16"},
  };
  REQUIRE(cases.size() >= 15);
  std::set<std::string> messages;
  for (const Malformed& c : cases) {
    INFO("case: " << c.what);
    const std::string path = scratch(std::string("bad-") + std::to_string(messages.size()) + ".h5");
    fs::copy_file(good_path, path, fs::copy_options::overwrite_existing);
    c.br(path);
    const std::string error = read_error(path);
    INFO("error: " << error);
    REQUIRE(error.rfind(path + ": ", 0) == 0);  // names the file first
    REQUIRE(error.find(c.message) != std::string::npos);
    REQUIRE(error.find('\n') == std::string::npos);
    REQUIRE(cli_validate(path) == 4);
    messages.insert(error.substr(path.size()));
  }
  REQUIRE(messages.size() == cases.size());  // every case has its own message
}

TEST_CASE("malformed batch files: not HDF5, missing, empty", "[batch_io]") {
  const std::string text = scratch("not-hdf5.h5");
  std::ofstream(text) << "this is not an HDF5 file\n";
  REQUIRE(read_error(text) == text + ": file: is not an HDF5 file");
  REQUIRE(cli_validate(text) == 4);

  const std::string missing = scratch("missing.h5");
  REQUIRE(read_error(missing) == missing + ": file: does not exist or cannot be accessed");
  REQUIRE(cli_validate(missing) == 4);

  const std::string truncated = scratch("truncated.h5");
  write_batch(truncated, test::small_batch(22));
  fs::resize_file(truncated, fs::file_size(truncated) / 2);
  REQUIRE_FALSE(read_error(truncated).empty());
  REQUIRE(cli_validate(truncated) == 4);
}

TEST_CASE("validate: all files are checked, one line each, exit 4 if any is invalid", "[batch_io]") {
  const Batch b = test::small_batch(23);
  const std::string good = scratch("v-good.h5"), bad = scratch("v-bad.h5"), out = scratch("v-out.txt");
  write_batch(good, b);
  std::ofstream(bad) << "nope";
  const std::string cmd = std::string(DSA_BINARY) + " validate '" + bad + "' '" + good + "' >'" + out + "' 2>&1";
  const int status = std::system(cmd.c_str());
  REQUIRE(WEXITSTATUS(status) == 4);
  const std::string text = file_bytes(out);
  REQUIRE(text.find(good + ": valid (" + content_id(b) + ")") != std::string::npos);
  REQUIRE(text.find(bad + ": file: is not an HDF5 file") != std::string::npos);
}

TEST_CASE("inspect prints the summary", "[batch_io]") {
  const Batch b = test::small_batch(24);
  const std::string path = scratch("inspect.h5"), out = scratch("inspect.txt");
  write_batch(path, b);
  const int status = std::system((std::string(DSA_BINARY) + " inspect '" + path + "' >'" + out + "' 2>&1").c_str());
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string text = file_bytes(out);
  INFO(text);
  for (const std::string& s : {std::string("content ID:     ") + content_id(b), std::string("requests:       3 (1 without rows"),
                               std::string("rows:           7"), std::string("min 0 / p50 100 / max 300; L = 0: 1 rows"),
                               std::string("20 source; 24 consumer; 28 consumer;"), std::string("tails:          3 rows in 2 requests"),
                               std::string("reference-sparse (test reference-sparse, cpu): rows_done 5/7, blocks"),
                               std::string("page size:      16 slots; pool 26 pages")})
    REQUIRE(text.find(s) != std::string::npos);
}

TEST_CASE("corrupted bytes give an InputError or a valid batch, never a crash", "[batch_io]") {
  const std::string good = scratch("fuzz-good.h5"), path = scratch("fuzz.h5");
  write_batch(good, test::small_batch(25));
  const std::string bytes = file_bytes(good);
  std::mt19937 rng(99);
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 300; ++i) {
    std::string broken = bytes;
    // Most object headers and B-trees sit near the start and the end of the file.
    const size_t window = std::min<size_t>(8192, broken.size());
    for (int k = 0; k < 1 + i % 4; ++k) {
      const size_t at = i % 2 ? rng() % window : broken.size() - 1 - rng() % window;
      broken[at] = char(rng() & 0xff);
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << broken;
    try {
      const Batch b = read_batch(path);
      validate_batch(b, path);  // what it returns passed every rule
      ++accepted;
    } catch (const InputError&) {
      ++rejected;
    }
  }
  INFO("accepted " << accepted << ", rejected " << rejected);
  REQUIRE(rejected > 50);
}
