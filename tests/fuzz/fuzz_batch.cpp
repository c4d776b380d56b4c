// libFuzzer target: the batch reader and validator (read_batch: HDF5 -> Batch, every rule of
// docs/batch-format.md, the memory budget checked before anything is read).
//
// Structure-aware: the input is a recipe of edits to a small valid batch (tests/fuzz/seed.h5),
// applied with the HDF5 library to a copy, which read_batch then reads: dataset contents
// overwritten with fuzz bytes, datasets replaced by ones of another type or of any shape (up to
// 2^40 rows declared, chunked, nothing stored), datasets, groups and attributes deleted,
// attributes rewritten. HDF5 itself only ever parses well-formed files: fuzzing its parser with
// raw bytes finds HDF5's own bugs (1.10.8 over-reads in H5Aexists_by_name within seconds), not
// the harness's. A refusal is InputError; anything else escaping, a crash, a sanitizer report
// or an allocation beyond -malloc_limit_mb is a finding.
#include <fuzzer/FuzzedDataProvider.h>
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "harness/batch/batch_io.hpp"
#include "harness/batch/h5_util.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using dsa::h5::Handle;

struct Seed {
  std::string bytes;                  // the file
  std::vector<std::string> objects;   // every group and dataset, "/" first
  std::vector<std::string> datasets;  // the datasets among them
};

void collect(const dsa::h5::Reader& r, const std::string& group, Seed* seed) {
  for (const std::string& child : r.children(group)) {
    const std::string path = (group == "/" ? "" : group) + "/" + child;
    seed->objects.push_back(path);
    if (r.is_group(path)) collect(r, path, seed);
    else seed->datasets.push_back(path);
  }
}

const Seed& seed() {
  static const Seed s = [] {
    Seed out;
    std::ifstream in(DSA_FUZZ_SEED_BATCH, std::ios::binary);
    out.bytes.assign(std::istreambuf_iterator<char>(in), {});
    if (out.bytes.empty()) std::abort();  // the build, not an input: nothing to fuzz
    const dsa::h5::Reader r(DSA_FUZZ_SEED_BATCH);
    out.objects.push_back("/");
    collect(r, "/", &out);
    return out;
  }();
  return s;
}

template <typename T>
const T& pick(FuzzedDataProvider& in, const std::vector<T>& v) {
  return v[in.ConsumeIntegralInRange<size_t>(0, v.size() - 1)];
}

// Overwrites bytes of a dataset's contents (read and written in its own stored type).
void scribble(FuzzedDataProvider& in, hid_t file, const std::string& path) {
  Handle ds(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const size_t points = size_t(H5Sget_simple_extent_npoints(space.get()));
  const size_t n = points * H5Tget_size(type.get());
  // No more points than reshape fills (every seed dataset has fewer): a larger one stores
  // nothing, and reading and writing it whole, in reshape's small chunks, made HDF5 itself
  // allocate 1.6 GB (a libFuzzer out-of-memory finding in the harness, not in read_batch).
  if (n == 0 || points > (1u << 16)) return;
  std::vector<uint8_t> buf(n);
  if (H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) return;
  for (int edits = in.ConsumeIntegralInRange(1, 8); edits > 0 && in.remaining_bytes(); --edits) {
    const size_t at = in.ConsumeIntegralInRange<size_t>(0, n - 1);
    const std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(in.ConsumeIntegralInRange<size_t>(1, 16));
    for (size_t i = 0; i < bytes.size() && at + i < n; ++i) buf[at + i] = bytes[i];
  }
  H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
}

// Replaces a dataset by one of any element type and shape, chunked, with contents written only
// when small (a declared 2^40 rows stores nothing: the reader must refuse it from the shape).
void reshape(FuzzedDataProvider& in, hid_t file, const std::string& path) {
  static const hid_t* types[] = {&H5T_NATIVE_INT32_g, &H5T_NATIVE_UINT8_g, &H5T_NATIVE_UINT16_g, &H5T_NATIVE_FLOAT_g,
                                 &H5T_NATIVE_INT64_g, &H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_INT8_g};
  H5open();
  const hid_t type = *types[in.ConsumeIntegralInRange<size_t>(0, std::size(types) - 1)];
  const int rank = in.ConsumeIntegralInRange(0, 3);
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), chunk(static_cast<size_t>(rank));
  hsize_t points = 1;
  for (int i = 0; i < rank; ++i) {
    dims[size_t(i)] = in.ConsumeBool() ? in.ConsumeIntegralInRange<hsize_t>(0, 40) : in.ConsumeIntegralInRange<hsize_t>(0, hsize_t(1) << 40);
    chunk[size_t(i)] = std::max<hsize_t>(1, std::min<hsize_t>(dims[size_t(i)], 64));
    points = dims[size_t(i)] > 0 && points > (hsize_t(1) << 40) / dims[size_t(i)] ? (hsize_t(1) << 41) : points * dims[size_t(i)];
  }
  H5Ldelete(file, path.c_str(), H5P_DEFAULT);
  Handle space(H5Screate_simple(rank, dims.data(), nullptr), H5Sclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (rank > 0) H5Pset_chunk(dcpl.get(), rank, chunk.data());
  Handle ds(H5Dcreate2(file, path.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  const size_t bytes = size_t(points) * H5Tget_size(type);
  if (!ds.valid() || points > (1u << 16)) return;
  std::vector<uint8_t> data = in.ConsumeBytes<uint8_t>(bytes);
  data.resize(bytes);
  H5Dwrite(ds.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
}

// Rewrites, deletes or adds an attribute of an object: an integer, or a string of fuzz bytes.
void attribute(FuzzedDataProvider& in, hid_t file, const std::string& object) {
  std::vector<std::string> names;
  H5Aiterate_by_name(file, object.c_str(), H5_INDEX_NAME, H5_ITER_INC, nullptr,
                     [](hid_t, const char* name, const H5A_info_t*, void* out) {
                       static_cast<std::vector<std::string>*>(out)->push_back(name);
                       return herr_t(0);
                     },
                     &names, H5P_DEFAULT);
  const std::string name = names.empty() || in.ConsumeIntegralInRange(0, 7) == 0 ? in.ConsumeRandomLengthString(16) : pick(in, names);
  if (name.empty()) return;
  H5Adelete_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT);
  const int kind = in.ConsumeIntegralInRange(0, 3);
  if (kind == 0) return;  // deleted
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  if (kind == 1) {
    const int64_t v = in.ConsumeIntegral<int64_t>();
    Handle a(H5Acreate_by_name(file, object.c_str(), name.c_str(), H5T_NATIVE_INT64, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (a.valid()) H5Awrite(a.get(), H5T_NATIVE_INT64, &v);
    return;
  }
  const std::string text = in.ConsumeRandomLengthString(64);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (kind == 2) H5Tset_size(type.get(), H5T_VARIABLE);
  else H5Tset_size(type.get(), std::max<size_t>(1, text.size()));
  Handle a(H5Acreate_by_name(file, object.c_str(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) return;
  const char* p = text.c_str();
  if (kind == 2) H5Awrite(a.get(), type.get(), &p);
  else {
    std::string fixed = text;
    fixed.resize(std::max<size_t>(1, text.size()));
    H5Awrite(a.get(), type.get(), fixed.data());
  }
}

void apply(FuzzedDataProvider& in, const std::string& path) {
  const Seed& s = seed();
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) std::abort();
  for (int edits = in.ConsumeIntegralInRange(1, 6); edits > 0 && in.remaining_bytes(); --edits) {
    switch (in.ConsumeIntegralInRange(0, 4)) {
      case 0: scribble(in, file.get(), pick(in, s.datasets)); break;
      case 1: reshape(in, file.get(), pick(in, s.datasets)); break;
      case 2: attribute(in, file.get(), pick(in, s.objects)); break;
      case 3: {
        const std::string& victim = pick(in, s.objects);
        if (victim != "/") H5Ldelete(file.get(), victim.c_str(), H5P_DEFAULT);
        break;
      }
      default: scribble(in, file.get(), pick(in, s.datasets)); break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dsa::h5::silence_errors();
  const std::string& path = dsa::fuzz::write_input(reinterpret_cast<const uint8_t*>(seed().bytes.data()), seed().bytes.size(), ".h5");
  FuzzedDataProvider in(data, size);
  apply(in, path);
  try {
    const dsa::Batch batch = dsa::read_batch(path);
    (void)batch.rows();
  } catch (const dsa::InputError&) {
  }
  return 0;
}
