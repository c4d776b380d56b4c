// validate/inspect (and run, replay) on small hostile files that declare huge datasets: refused
// from the shapes alone, at once, with exit 4 naming the file, the dataset and the budget.
#include <hdf5.h>

#include <filesystem>
#include <vector>

#include "tests/catch.hpp"
#include "tests/harness/cli/cli_run.hpp"

using namespace dsa::test;
namespace fs = std::filesystem;

namespace {

// Replaces `path` by a chunked dataset of `dims` that is never written: a few KB on disk, any
// size once read (every chunk reads back as the fill value).
void claim_huge(const std::string& file, const std::string& path, hid_t type, std::vector<hsize_t> dims) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(f >= 0);
  H5Ldelete(f, path.c_str(), H5P_DEFAULT);
  std::vector<hsize_t> chunk = dims;
  chunk[0] = 1 << 16;
  for (size_t i = 1; i < chunk.size(); ++i) chunk[0] = std::max<hsize_t>(1, chunk[0] / chunk[i]);
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
  const hid_t ds = H5Dcreate2(f, path.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(f);
}

}  // namespace

TEST_CASE("validate: 10^9 declared requests are refused from the shapes, under a second") {
  Scratch dir("huge-q");
  const std::string file = dir.sub("many requests.h5");
  fs::copy_file(kSmoke, file);
  for (const char* ds : {"/requests/num_rows", "/requests/compressed_len", "/requests/tail_rows"})
    claim_huge(file, ds, H5T_STD_I32LE, {1000000000});
  claim_huge(file, "/requests/page_table", H5T_STD_I32LE, {1000000000, 2});
  REQUIRE(fs::file_size(file) < (2 << 20));  // the 1.3 MB fixture plus a few KB of claims
  const CliResult r = cli("validate '" + file + "'", "DSA_MEMORY_BUDGET=1G");
  INFO(r.output);
  CHECK(r.code == 4);
  CHECK(has(r.output, file + ": /requests/num_rows: shape [1000000000]"));
  CHECK(has(r.output, "over the memory budget of 1.0 GiB"));
  CHECK(r.seconds < 1.0);
  // --memory-budget says the same, before or after the subcommand.
  CHECK(cli("--memory-budget 1G inspect '" + file + "'").code == 4);
  CHECK(has(cli("inspect '" + file + "' --memory-budget 1G").output, "memory budget of 1.0 GiB"));
  CHECK(cli("validate '" + file + "' --memory-budget lots").code == 4);
}

TEST_CASE("inspect, run, replay: a file claiming 10^9 rows is refused naming it, not 'out of memory'") {
  Scratch dir("huge-r");
  const std::string file = dir.sub("rows.h5");
  fs::copy_file(kSmoke, file);
  claim_huge(file, "/layers/20/q", H5T_STD_U8LE, {1000000000, 32, 64});  // 2 TB: over any default budget
  for (const std::string& cmd : {"validate " + file, "inspect " + file,
                                 "run " + file + " --impl reference-sparse -o " + dir.sub("out.h5"),
                                 "replay " + file + " --impl reference-sparse -o " + dir.sub("rep")}) {
    const CliResult r = cli(cmd);
    INFO(cmd << "\n" << r.output);
    CHECK(r.code == 4);
    CHECK(has(r.output, file + ": /layers/20/q: shape [1000000000, 32, 64]"));
    CHECK(has(r.output, "memory budget"));
    CHECK_FALSE(has(r.output, "out of memory"));
    CHECK(r.seconds < 1.0);
  }
}

TEST_CASE("validate: /rows/compress_len claiming 10^9 rows under the budget is refused before it is read") {
  Scratch dir("huge-len");
  const std::string file = dir.sub("rows.h5");
  fs::copy_file(kSmoke, file);
  claim_huge(file, "/rows/compress_len", H5T_STD_I32LE, {1000000000});  // 4 GB, 8 GB with lookups
  const CliResult r = cli("validate " + file, "DSA_MEMORY_BUDGET=64G");
  INFO(r.output);
  CHECK(r.code == 4);
  CHECK(has(r.output, file + ": /rows/compress_len: has 1000000000 rows but sum(/requests/num_rows) is 12"));
  CHECK(r.seconds < 1.0);
}
