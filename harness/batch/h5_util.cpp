#include "harness/batch/h5_util.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

#include "core/errors.hpp"

namespace dsa::h5 {
namespace {

constexpr int kDeflateLevel = 1;              // fixed: part of the byte-identical promise
constexpr int64_t kChunkBytes = 1 << 20;      // whole-dataset writes: about 1 MiB per chunk
constexpr uint64_t kMaxReadBytes = 1ull << 33;  // 8 GiB per dataset: refuse absurd shapes before allocating

hid_t mem_type(Elem elem) {
  switch (elem) {
    case Elem::i32: return H5T_NATIVE_INT32;
    case Elem::u8: return H5T_NATIVE_UINT8;
    case Elem::u16: return H5T_NATIVE_UINT16;
    case Elem::f32: return H5T_NATIVE_FLOAT;
  }
  return -1;
}

hid_t file_type(Elem elem) {
  switch (elem) {
    case Elem::i32: return H5T_STD_I32LE;
    case Elem::u8: return H5T_STD_U8LE;
    case Elem::u16: return H5T_STD_U16LE;
    case Elem::f32: return H5T_IEEE_F32LE;
  }
  return -1;
}

size_t elem_size(Elem elem) { return elem == Elem::i32 || elem == Elem::f32 ? 4 : elem == Elem::u16 ? 2 : 1; }

// True when the stored type is the element type the format names (any byte order).
bool type_matches(hid_t type, Elem elem) {
  const H5T_class_t cls = H5Tget_class(type);
  if (H5Tget_size(type) != elem_size(elem)) return false;
  if (elem == Elem::f32) return cls == H5T_FLOAT;
  if (cls != H5T_INTEGER) return false;
  return (H5Tget_sign(type) == H5T_SGN_2) == (elem == Elem::i32);
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

Handle plist(hid_t cls) { return Handle(H5Pcreate(cls), H5Pclose); }

template <class T>
void read_vector(const Reader& in, const std::string& path, Elem elem, int rank, std::vector<int64_t>* shape,
                 std::vector<T>* out) {
  Handle ds = in.open_dataset(path, elem, shape);
  if (int(shape->size()) != rank)
    in.fail(path, "has rank " + std::to_string(shape->size()) + " " + shape_text(*shape) + ", expected rank " +
                      std::to_string(rank));
  uint64_t n = 1;
  for (int64_t d : *shape) {
    if (d > 0 && n > kMaxReadBytes / uint64_t(d)) in.fail(path, "shape " + shape_text(*shape) + " is too large");
    n *= uint64_t(d);
  }
  if (n * sizeof(T) > kMaxReadBytes) in.fail(path, "shape " + shape_text(*shape) + " is too large");
  out->assign(size_t(n), T());
  if (n && H5Dread(ds.get(), mem_type(elem), H5S_ALL, H5S_ALL, H5P_DEFAULT, out->data()) < 0)
    in.fail(path, "could not be read (corrupt or unsupported storage)");
}

// A memory string type of the stored character set: HDF5 converts neither ASCII to UTF-8 nor
// back, so an ASCII memory type cannot read h5py's UTF-8 strings.
Handle string_mem_type(hid_t stored, size_t size) {
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_cset(mem.get(), H5Tget_cset(stored));
  H5Tset_size(mem.get(), size);
  return mem;
}

// Variable length (h5py's default): HDF5 allocates the text, we free it.
bool read_variable_string(hid_t attr, hid_t stored, std::string* out) {
  Handle mem = string_mem_type(stored, H5T_VARIABLE);
  char* text = nullptr;
  if (H5Aread(attr, mem.get(), &text) < 0) return false;
  *out = text ? text : "";
  H5free_memory(text);
  return true;
}

// Fixed length: read the stored bytes unchanged (same padding), then drop the padding the file
// declares: everything from the first NUL, or trailing spaces of a space-padded string.
bool read_fixed_string(hid_t attr, hid_t stored, std::string* out) {
  const size_t size = H5Tget_size(stored);
  Handle mem = string_mem_type(stored, size);
  const H5T_str_t pad = H5Tget_strpad(stored);
  H5Tset_strpad(mem.get(), pad);
  std::string buf(size, '\0');
  if (H5Aread(attr, mem.get(), buf.data()) < 0) return false;
  if (pad == H5T_STR_SPACEPAD) {
    while (!buf.empty() && buf.back() == ' ') buf.pop_back();
  } else {
    buf.resize(std::min(buf.find('\0'), buf.size()));
  }
  *out = buf;
  return true;
}

}  // namespace

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    closer_ = other.closer_;
    other.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ >= 0 && closer_) closer_(id_);
  id_ = -1;
}

const char* elem_name(Elem elem) {
  switch (elem) {
    case Elem::i32: return "int32";
    case Elem::u8: return "uint8";
    case Elem::u16: return "uint16";
    case Elem::f32: return "float32";
  }
  return "?";
}

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// ---------------------------------------------------------------- Reader

Reader::Reader(const std::string& file) : file_(file) {
  silence_errors();
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) fail("file", "does not exist or cannot be accessed");
  if (!S_ISREG(st.st_mode)) fail("file", "is not a regular file");
  if (!std::ifstream(file, std::ios::binary).good()) fail("file", "cannot be opened for reading");
  if (H5Fis_hdf5(file.c_str()) <= 0) fail("file", "is not an HDF5 file");
  Handle fapl = plist(H5P_FILE_ACCESS);
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  fid_ = Handle(H5Fopen(file.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!fid_.valid()) fail("file", "HDF5 cannot open it (corrupt or truncated)");
}

void Reader::fail(const std::string& what, const std::string& rule) const { throw InputError(file_, what, rule); }

bool Reader::exists(const std::string& path) const {
  // H5Lexists needs every parent to exist, so walk the path one component at a time.
  size_t pos = 0;
  while (true) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.size() > 1 && H5Lexists(fid_.get(), prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

bool Reader::is_group(const std::string& path) const {
  if (!exists(path)) return false;
  // H5Oopen + H5Iget_type: the same call in HDF5 1.10, 1.12 and 1.14 (H5Oget_info changed).
  Handle obj(H5Oopen(fid_.get(), path.c_str(), H5P_DEFAULT), H5Oclose);
  return obj.valid() && H5Iget_type(obj.get()) == H5I_GROUP;
}

std::vector<std::string> Reader::children(const std::string& group) const {
  if (!is_group(group)) fail(group, "is missing or not a group");
  Handle g(H5Gopen2(fid_.get(), group.c_str(), H5P_DEFAULT), H5Gclose);
  H5G_info_t info;
  if (!g.valid() || H5Gget_info(g.get(), &info) < 0) fail(group, "cannot be listed");
  constexpr hsize_t kMaxMembers = 1000000;  // listing costs memory per name: refuse absurd groups first
  if (info.nlinks > kMaxMembers) fail(group, "has " + std::to_string(info.nlinks) + " members, more than any batch file");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail(group, "cannot be listed");
    std::string name(size_t(len) + 1, '\0');
    H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(size_t(len));
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Handle Reader::open_dataset(const std::string& path, Elem elem, std::vector<int64_t>* shape) const {
  if (!exists(path)) fail(path, "dataset is missing");
  Handle ds(H5Dopen2(fid_.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(path, "is not a dataset");
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  if (!type.valid() || !type_matches(type.get(), elem)) fail(path, std::string("dtype is not ") + elem_name(elem));
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0 || H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE)
    fail(path, "is not a simple (array) dataset");
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), max_dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), max_dims.data());
  shape->assign(dims.begin(), dims.end());
  check_chunk_shape(ds, path, max_dims);
  return ds;
}

// HDF5 refuses to create a chunk larger than a fixed dimension, so a file that declares one has a
// corrupt layout message. HDF5 1.10.8 does not check it when reading: it copies rows past the end
// of the smaller chunk it inflated (a heap over-read, then a crash in H5Dread).
void Reader::check_chunk_shape(const Handle& ds, const std::string& path, const std::vector<hsize_t>& max_dims) const {
  Handle dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
  if (!dcpl.valid() || H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return;
  std::vector<hsize_t> chunk(max_dims.size());
  if (H5Pget_chunk(dcpl.get(), int(chunk.size()), chunk.data()) != int(chunk.size()))
    fail(path, "chunk rank is not the dataset's rank " + std::to_string(chunk.size()));
  for (size_t i = 0; i < chunk.size(); ++i) {
    if (max_dims[i] != H5S_UNLIMITED && chunk[i] > max_dims[i])
      fail(path, "chunk shape " + shape_text(std::vector<int64_t>(chunk.begin(), chunk.end())) + " exceeds the fixed shape " +
                     shape_text(std::vector<int64_t>(max_dims.begin(), max_dims.end())) + " (corrupt layout)");
  }
}

void Reader::read(const std::string& path, int rank, std::vector<int64_t>* shape, std::vector<int32_t>* out) const {
  read_vector(*this, path, Elem::i32, rank, shape, out);
}
void Reader::read(const std::string& path, int rank, std::vector<int64_t>* shape, std::vector<uint8_t>* out) const {
  read_vector(*this, path, Elem::u8, rank, shape, out);
}
void Reader::read(const std::string& path, int rank, std::vector<int64_t>* shape, std::vector<float>* out) const {
  read_vector(*this, path, Elem::f32, rank, shape, out);
}

void Reader::read_row(const Handle& ds, const std::string& path, Elem elem, int64_t row, int64_t cols,
                      void* out) const {
  if (cols == 0) return;
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const hsize_t start[2] = {hsize_t(row), 0}, count[2] = {1, hsize_t(cols)};
  Handle mem(H5Screate_simple(2, count, nullptr), H5Sclose);
  if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dread(ds.get(), mem_type(elem), mem.get(), space.get(), H5P_DEFAULT, out) < 0)
    fail(path, "row " + std::to_string(row) + " could not be read");
}

void Reader::walk(const std::string& group, int depth, std::vector<DatasetShape>* out) const {
  constexpr int kMaxDepth = 8;            // the format nests 4 deep (/outputs/NAME/LAYER/positions)
  constexpr size_t kMaxObjects = 100000;  // far beyond any real batch or result file
  for (const std::string& name : children(group)) {
    const std::string path = (group == "/" ? "" : group) + "/" + name;
    if (out->size() >= kMaxObjects) fail(path, "the file holds more than " + std::to_string(kMaxObjects) + " objects");
    if (is_group(path)) {
      if (depth + 1 < kMaxDepth) walk(path, depth + 1, out);
      continue;
    }
    Handle ds(H5Dopen2(fid_.get(), path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.valid()) continue;  // not a dataset (a named type, a dangling link): the reader names it if needed
    Handle type(H5Dget_type(ds.get()), H5Tclose);
    Handle space(H5Dget_space(ds.get()), H5Sclose);
    const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (!type.valid() || rank < 0) continue;
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    out->push_back({path, H5Tget_size(type.get()), std::vector<int64_t>(dims.begin(), dims.end())});
  }
}

std::vector<Reader::DatasetShape> Reader::dataset_shapes(const std::string& group) const {
  std::vector<DatasetShape> out;
  walk(group, 0, &out);
  return out;
}

Handle Reader::open_attr(const std::string& object, const std::string& name) const {
  if (!has_attr(object, name)) fail(object == "/" ? "attribute " + name : object + " attribute " + name, "is missing");
  return Handle(H5Aopen_by_name(fid_.get(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
}

bool Reader::has_attr(const std::string& object, const std::string& name) const {
  return H5Aexists_by_name(fid_.get(), object.c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

int64_t Reader::int_attr(const std::string& object, const std::string& name) const {
  const std::string what = object == "/" ? "attribute " + name : object + " attribute " + name;
  Handle attr = open_attr(object, name);
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_INTEGER) fail(what, "is not an integer");
  if (H5Sget_simple_extent_npoints(space.get()) != 1) fail(what, "is not a single value");
  if (H5Tget_size(type.get()) > 8) fail(what, "is an integer wider than 64 bits");
  // Unsigned values are read as unsigned: HDF5 would clip a uint64 above INT64_MAX silently.
  if (H5Tget_sign(type.get()) == H5T_SGN_NONE) {
    uint64_t value = 0;
    if (H5Aread(attr.get(), H5T_NATIVE_UINT64, &value) < 0) fail(what, "could not be read");
    if (value > uint64_t(std::numeric_limits<int64_t>::max())) fail(what, std::to_string(value) + " is out of range");
    return int64_t(value);
  }
  int64_t value = 0;
  if (H5Aread(attr.get(), H5T_NATIVE_INT64, &value) < 0) fail(what, "could not be read");
  return value;
}

std::string Reader::string_attr(const std::string& object, const std::string& name) const {
  const std::string what = object == "/" ? "attribute " + name : object + " attribute " + name;
  Handle attr = open_attr(object, name);
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING) fail(what, "is not a string");
  if (H5Sget_simple_extent_npoints(space.get()) != 1) fail(what, "is not a single string");
  std::string value;
  const bool ok = H5Tis_variable_str(type.get()) > 0 ? read_variable_string(attr.get(), type.get(), &value)
                                                      : read_fixed_string(attr.get(), type.get(), &value);
  if (!ok) fail(what, "could not be read");
  return value;
}

// ---------------------------------------------------------------- Writer

Writer::Writer(const std::string& path) : path_(path), tmp_(path + ".tmp-" + std::to_string(::getpid())) {
  silence_errors();
  if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) fail("this HDF5 library has no deflate filter");
  Handle fcpl = plist(H5P_FILE_CREATE);
  Handle fapl = plist(H5P_FILE_ACCESS);
  H5Pset_obj_track_times(fcpl.get(), false);  // the root group's timestamps too
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  fid_ = Handle(H5Fcreate(tmp_.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose);
  if (!fid_.valid()) fail("cannot create the file (is the folder writable?)");
}

Writer::~Writer() {
  if (!committed_) {
    fid_.reset();
    std::remove(tmp_.c_str());
  }
}

void Writer::fail(const std::string& what) const { throw EnvironmentError(path_ + ": " + what); }

void Writer::commit() {
  if (H5Fflush(fid_.get(), H5F_SCOPE_GLOBAL) < 0) fail("HDF5 could not flush the file");
  fid_.reset();
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    fail("cannot rename " + tmp_ + " onto it");
  }
  committed_ = true;
}

void Writer::group(const std::string& path) {
  Handle gcpl = plist(H5P_GROUP_CREATE);
  H5Pset_obj_track_times(gcpl.get(), false);
  Handle g(H5Gcreate2(fid_.get(), path.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail("HDF5 could not create group " + path);
}

void Writer::int_attr(const std::string& object, const std::string& name, int64_t value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const hid_t type = value >= INT32_MIN && value <= INT32_MAX ? H5T_STD_I32LE : H5T_STD_I64LE;
  Handle attr(H5Acreate_by_name(fid_.get(), object.c_str(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT),
              H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), H5T_NATIVE_INT64, &value) < 0)
    fail("HDF5 could not write attribute " + name + " of " + object);
}

void Writer::string_attr(const std::string& object, const std::string& name, const std::string& value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);  // fixed length, NUL-terminated
  H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  Handle attr(H5Acreate_by_name(fid_.get(), object.c_str(), name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), type.get(), value.c_str()) < 0)
    fail("HDF5 could not write attribute " + name + " of " + object);
}

Handle Writer::create(const std::string& path, Elem elem, const std::vector<int64_t>& dims, int64_t chunk_rows,
                      const int32_t* fill, bool compress) {
  std::vector<hsize_t> hd(dims.begin(), dims.end());
  Handle space(H5Screate_simple(int(hd.size()), hd.data(), nullptr), H5Sclose);
  Handle dcpl = plist(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl.get(), false);
  const bool empty = std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d == 0; });
  if (!empty) {  // chunked datasets need non-zero chunk dimensions; empty ones stay contiguous
    std::vector<hsize_t> chunk = hd;
    chunk[0] = hsize_t(std::clamp<int64_t>(chunk_rows, 1, dims[0]));
    H5Pset_chunk(dcpl.get(), int(chunk.size()), chunk.data());
    if (compress && elem_size(elem) > 1) H5Pset_shuffle(dcpl.get());
    if (compress) H5Pset_deflate(dcpl.get(), kDeflateLevel);
    if (fill && elem == Elem::i32) H5Pset_fill_value(dcpl.get(), H5T_NATIVE_INT32, fill);
  }
  Handle ds(H5Dcreate2(fid_.get(), path.c_str(), file_type(elem), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
            H5Dclose);
  if (!ds.valid()) fail("HDF5 could not create dataset " + path);
  return ds;
}

void Writer::dataset(const std::string& path, Elem elem, const std::vector<int64_t>& dims, const void* data,
                     bool compress) {
  int64_t row_bytes = int64_t(elem_size(elem)), total = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) row_bytes *= dims[i];
    total *= dims[i];
  }
  Handle ds = create(path, elem, dims, std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(1, row_bytes)), nullptr,
                     compress);
  if (total > 0 && H5Dwrite(ds.get(), mem_type(elem), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail("HDF5 could not write dataset " + path);
}

Handle Writer::row_dataset(const std::string& path, Elem elem, int64_t rows, int64_t cols, int64_t chunk_rows,
                           const int32_t* fill) {
  return create(path, elem, {rows, cols}, chunk_rows, fill);
}

void Writer::write_row(const Handle& ds, const std::string& path, Elem elem, int64_t row, int64_t cols,
                       const void* data) {
  write_rows(ds, path, elem, row, 1, cols, data);
}

void Writer::write_rows(const Handle& ds, const std::string& path, Elem elem, int64_t row, int64_t count_rows,
                        int64_t cols, const void* data) {
  if (cols == 0 || count_rows == 0) return;
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const hsize_t start[2] = {hsize_t(row), 0}, count[2] = {hsize_t(count_rows), hsize_t(cols)};
  Handle mem(H5Screate_simple(2, count, nullptr), H5Sclose);
  if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dwrite(ds.get(), mem_type(elem), mem.get(), space.get(), H5P_DEFAULT, data) < 0)
    fail("HDF5 could not write rows " + std::to_string(row) + ".." + std::to_string(row + count_rows - 1) + " of " + path);
}

}  // namespace dsa::h5
