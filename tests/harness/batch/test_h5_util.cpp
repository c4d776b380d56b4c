// The HDF5 reader's attributes: every string form HDF5 allows (fixed or variable length, ASCII or
// UTF-8, NUL-terminated, NUL- or space-padded) and integers of every width, sign and byte order
// read back as written; values that do not fit are refused by name, never clipped; a chunk shape
// only a corrupt file declares is refused before HDF5 reads through it.
#include <hdf5.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "harness/batch/h5_util.hpp"
#include "tests/catch.hpp"

namespace fs = std::filesystem;
using namespace dsa;

namespace {

const std::string kUtf8Text = "captured on H200 \xe2\x80\x94 step 7, 5 \xc2\xb5s";  // em dash, micro sign

struct NewFile {
  hid_t id;
  explicit NewFile(const std::string& path)
      : id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) { REQUIRE(id >= 0); }
  ~NewFile() { H5Fclose(id); }
};

struct StringForm {
  std::string name;
  bool variable;
  H5T_cset_t cset;
  H5T_str_t pad;
  size_t size;  // fixed length: stored bytes (>= the text's); variable: unused
  std::string text;
};

void write_string(hid_t file, const StringForm& f) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_cset(type, f.cset);
  H5Tset_strpad(type, f.pad);
  H5Tset_size(type, f.variable ? H5T_VARIABLE : f.size);
  hid_t attr = H5Acreate2(file, f.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  if (f.variable) {
    const char* p = f.text.c_str();
    REQUIRE(H5Awrite(attr, type, &p) >= 0);
  } else {
    // The stored bytes exactly as the padding rule lays them out.
    std::string bytes = f.text;
    bytes.resize(f.size, f.pad == H5T_STR_SPACEPAD ? ' ' : '\0');
    REQUIRE(H5Awrite(attr, type, bytes.data()) >= 0);
  }
  H5Aclose(attr);
  H5Tclose(type);
  H5Sclose(space);
}

template <class T>
void write_int(hid_t file, const std::string& name, hid_t file_type, hid_t mem_type, T value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(attr >= 0);
  REQUIRE(H5Awrite(attr, mem_type, &value) >= 0);
  H5Aclose(attr);
  H5Sclose(space);
}

std::string path_for(const std::string& tag) {
  return (fs::temp_directory_path() / ("dsa-h5-util-" + tag + "-" + std::to_string(::getpid()) + ".h5")).string();
}

std::string error_of(const h5::Reader& in, const std::string& name, bool as_int) {
  try {
    if (as_int) in.int_attr("/", name);
    else in.string_attr("/", name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("h5 reader: string attributes in every form HDF5 allows") {
  const std::string ascii = "dsa-indexer-batch";
  std::vector<StringForm> forms;
  for (H5T_cset_t cset : {H5T_CSET_ASCII, H5T_CSET_UTF8}) {
    const std::string text = cset == H5T_CSET_UTF8 ? kUtf8Text : ascii;
    const std::string c = cset == H5T_CSET_UTF8 ? "utf8" : "ascii";
    for (H5T_str_t pad : {H5T_STR_NULLTERM, H5T_STR_NULLPAD}) {
      const std::string p = pad == H5T_STR_NULLTERM ? "nullterm" : "nullpad";
      forms.push_back({"var-" + c + "-" + p, true, cset, pad, 0, text});
    }
    forms.push_back({"fixed-" + c + "-nullterm", false, cset, H5T_STR_NULLTERM, text.size() + 1, text});
    forms.push_back({"fixed-" + c + "-nullterm-long", false, cset, H5T_STR_NULLTERM, text.size() + 9, text});
    forms.push_back({"fixed-" + c + "-nullpad-exact", false, cset, H5T_STR_NULLPAD, text.size(), text});  // no NUL
    forms.push_back({"fixed-" + c + "-nullpad-long", false, cset, H5T_STR_NULLPAD, text.size() + 5, text});
    forms.push_back({"fixed-" + c + "-spacepad-exact", false, cset, H5T_STR_SPACEPAD, text.size(), text});
    forms.push_back({"fixed-" + c + "-spacepad-long", false, cset, H5T_STR_SPACEPAD, text.size() + 7, text});
  }
  forms.push_back({"var-utf8-empty", true, H5T_CSET_UTF8, H5T_STR_NULLTERM, 0, ""});
  // Padding is the file's: a NUL-terminated string keeps its own trailing spaces.
  forms.push_back({"fixed-ascii-nullterm-trailing-space", false, H5T_CSET_ASCII, H5T_STR_NULLTERM, 8, "plain  "});

  const std::string path = path_for("strings");
  {
    NewFile f(path);
    for (const StringForm& form : forms) write_string(f.id, form);
  }
  const h5::Reader in(path);
  for (const StringForm& form : forms) {
    INFO("attribute " << form.name);
    CHECK(in.string_attr("/", form.name) == form.text);
  }
  CHECK(error_of(in, "var-utf8-nullterm", true).find("attribute var-utf8-nullterm: is not an integer") !=
        std::string::npos);
  fs::remove(path);
}

TEST_CASE("h5 reader: integer attributes of every width, sign and byte order") {
  const std::string path = path_for("ints");
  {
    NewFile f(path);
    write_int<int8_t>(f.id, "i8", H5T_STD_I8LE, H5T_NATIVE_INT8, -100);
    write_int<int16_t>(f.id, "i16be", H5T_STD_I16BE, H5T_NATIVE_INT16, -30000);
    write_int<int32_t>(f.id, "i32", H5T_STD_I32LE, H5T_NATIVE_INT32, -1);
    write_int<int64_t>(f.id, "i64", H5T_STD_I64LE, H5T_NATIVE_INT64, -(int64_t(1) << 40));
    write_int<int64_t>(f.id, "i64be", H5T_STD_I64BE, H5T_NATIVE_INT64, 2048);
    write_int<uint8_t>(f.id, "u8", H5T_STD_U8LE, H5T_NATIVE_UINT8, 255);
    write_int<uint16_t>(f.id, "u16be", H5T_STD_U16BE, H5T_NATIVE_UINT16, 65535);
    write_int<uint32_t>(f.id, "u32", H5T_STD_U32LE, H5T_NATIVE_UINT32, 4000000000u);
    write_int<uint64_t>(f.id, "u64", H5T_STD_U64LE, H5T_NATIVE_UINT64, uint64_t(1) << 62);
    write_int<uint64_t>(f.id, "u64-huge", H5T_STD_U64LE, H5T_NATIVE_UINT64, ~uint64_t(0));
    write_string(f.id, {"text", true, H5T_CSET_UTF8, H5T_STR_NULLTERM, 0, "512"});
  }
  const h5::Reader in(path);
  CHECK(in.int_attr("/", "i8") == -100);
  CHECK(in.int_attr("/", "i16be") == -30000);
  CHECK(in.int_attr("/", "i32") == -1);
  CHECK(in.int_attr("/", "i64") == -(int64_t(1) << 40));
  CHECK(in.int_attr("/", "i64be") == 2048);
  CHECK(in.int_attr("/", "u8") == 255);
  CHECK(in.int_attr("/", "u16be") == 65535);
  CHECK(in.int_attr("/", "u32") == 4000000000ll);
  CHECK(in.int_attr("/", "u64") == int64_t(1) << 62);
  // Not clipped to INT64_MAX: refused, naming the attribute and the value.
  CHECK(error_of(in, "u64-huge", true).find("attribute u64-huge: 18446744073709551615 is out of range") !=
        std::string::npos);
  CHECK(error_of(in, "text", true).find("attribute text: is not an integer") != std::string::npos);
  CHECK(error_of(in, "u8", false).find("attribute u8: is not a string") != std::string::npos);
  CHECK(error_of(in, "absent", true).find("attribute absent: is missing") != std::string::npos);
  fs::remove(path);
}

namespace {

uint16_t score_at(size_t row, size_t col) { return uint16_t(row + 1 + (row * 1000 + col) % 13); }

// A [7, 1000] uint16 dataset /scores (score_at), shuffled and deflated in chunks of `chunk` x
// 1000, its first dimension extendible when `max_rows` is H5S_UNLIMITED.
void write_chunked_scores(const std::string& path, hsize_t chunk, hsize_t max_rows) {
  NewFile f(path);
  const hsize_t dims[2] = {7, 1000}, max_dims[2] = {max_rows, 1000}, chunk_dims[2] = {chunk, 1000};
  std::vector<uint16_t> data(7 * 1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = score_at(i / 1000, i % 1000);
  hid_t space = H5Screate_simple(2, dims, max_dims);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, 2, chunk_dims);
  H5Pset_shuffle(dcpl);
  H5Pset_deflate(dcpl, 1);
  hid_t ds = H5Dcreate2(f.id, "scores", H5T_STD_U16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  REQUIRE(H5Dwrite(ds, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
}

std::string open_error(const std::string& path) {
  const h5::Reader in(path);
  std::vector<int64_t> shape;
  try {
    in.open_dataset("/scores", h5::Elem::u16, &shape);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// HDF5 1.10.8 trusts a chunk shape larger than the dataset: it inflates the stored 2-row chunk,
// then copies rows 2.. from past its end (found by ASan in test_batch's corrupted-bytes case: a
// heap over-read in H5Dread, then a crash; `dsa-harness validate` crashed on such a file).
TEST_CASE("h5 reader: a chunk larger than the fixed shape is refused before any read") {
  const std::string path = path_for("chunk");
  write_chunked_scores(path, 2, 7);
  {
    const h5::Reader in(path);
    std::vector<int64_t> shape;
    const h5::Handle ds = in.open_dataset("/scores", h5::Elem::u16, &shape);
    std::vector<uint16_t> row(1000);
    in.read_row(ds, "/scores", h5::Elem::u16, 6, 1000, row.data());
    CHECK(row[0] == score_at(6, 0));
    CHECK(row[999] == score_at(6, 999));
  }
  // The layout message (version 3) holds the chunk shape as 32-bit sizes, then the element size:
  // 2, 1000, 2. Corrupt the 2 rows into 35, as one flipped byte of test_batch's case did.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string layout("\x02\0\0\0\xe8\x03\0\0\x02\0\0\0", 12);
  const size_t at = bytes.find(layout);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find(layout, at + 1) == std::string::npos);
  bytes[at] = 35;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  CHECK(open_error(path) == path + ": /scores: chunk shape [35, 1000] exceeds the fixed shape [7, 1000] (corrupt layout)");
  fs::remove(path);
}

TEST_CASE("h5 reader: a chunk larger than an extendible dimension is allowed") {
  const std::string path = path_for("chunk-unlimited");
  write_chunked_scores(path, 16, H5S_UNLIMITED);
  CHECK(open_error(path) == "");
  fs::remove(path);
}
