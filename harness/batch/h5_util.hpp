#pragma once
// Thin RAII layer over the HDF5 C API for batch_io.cpp: owned handles, a reader whose every
// failure is an InputError naming file and dataset, and a deterministic, atomic writer.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dsa::h5 {

// An owned hid_t closed by its matching H5*close function.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// Element types of the format's datasets.
enum class Elem { i32, u8, u16, f32 };
const char* elem_name(Elem elem);

// Turns HDF5's own error printing off: our messages say what went wrong.
void silence_errors();

class Reader {
 public:
  // Opens read-only; InputError when the file is missing, unreadable or not HDF5.
  explicit Reader(const std::string& file);
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const std::string& what, const std::string& rule) const;
  bool exists(const std::string& path) const;  // every component of path exists
  bool is_group(const std::string& path) const;
  std::vector<std::string> children(const std::string& group) const;  // sorted by name

  // Opens a dataset after checking its element type; `shape` gets its dimensions.
  Handle open_dataset(const std::string& path, Elem elem, std::vector<int64_t>* shape) const;
  // InputError when a chunk is larger than a fixed dimension (only a corrupt file declares one).
  void check_chunk_shape(const Handle& ds, const std::string& path, const std::vector<hsize_t>& max_dims) const;
  // Whole dataset read; checks the element type and that the rank is `rank`.
  void read(const std::string& path, int rank, std::vector<int64_t>* shape, std::vector<int32_t>* out) const;
  void read(const std::string& path, int rank, std::vector<int64_t>* shape, std::vector<uint8_t>* out) const;
  void read(const std::string& path, int rank, std::vector<int64_t>* shape, std::vector<float>* out) const;
  // Reads columns [0, cols) of row `row` of a 2-D dataset opened with open_dataset.
  void read_row(const Handle& ds, const std::string& path, Elem elem, int64_t row, int64_t cols, void* out) const;

  // Every dataset below `group` with its element size and shape, found without reading any data.
  // Walks at most 8 levels and 100000 objects (a hostile file may nest or link forever); more
  // objects than that is an InputError.
  struct DatasetShape {
    std::string path;
    size_t elem_bytes = 0;
    std::vector<int64_t> dims;
  };
  std::vector<DatasetShape> dataset_shapes(const std::string& group) const;

  bool has_attr(const std::string& object, const std::string& name) const;
  int64_t int_attr(const std::string& object, const std::string& name) const;
  std::string string_attr(const std::string& object, const std::string& name) const;

 private:
  Handle open_attr(const std::string& object, const std::string& name) const;
  void walk(const std::string& group, int depth, std::vector<DatasetShape>* out) const;
  std::string file_;
  Handle fid_;
};

// Writes "<path>.tmp-<pid>" and renames it onto path in commit(); the destructor removes an
// uncommitted temp file. Every object is created without timestamps and every dataset with fixed
// chunking and deflate level, so equal content gives equal bytes. Failures throw EnvironmentError.
class Writer {
 public:
  explicit Writer(const std::string& path);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  void commit();

  void group(const std::string& path);
  void int_attr(const std::string& object, const std::string& name, int64_t value);
  void string_attr(const std::string& object, const std::string& name, const std::string& value);
  // A whole dataset; dims[0] rows, chunked by about 1 MiB of rows.
  // `compress` false: stored chunked but not deflated (payloads that barely compress: packed
  // fp4 q and the key pool), which makes reading a large batch several times cheaper.
  void dataset(const std::string& path, Elem elem, const std::vector<int64_t>& dims, const void* data,
               bool compress = true);
  // An empty 2-D dataset chunked by `chunk_rows` rows, to be filled row by row with write_row.
  // `fill` (i32 datasets only, may be null): what unwritten rows read back as, so rows that were
  // never computed cost neither time nor space.
  Handle row_dataset(const std::string& path, Elem elem, int64_t rows, int64_t cols, int64_t chunk_rows,
                     const int32_t* fill = nullptr);
  void write_row(const Handle& ds, const std::string& path, Elem elem, int64_t row, int64_t cols, const void* data);
  // Rows [row, row + count) of a full-width row dataset.
  void write_rows(const Handle& ds, const std::string& path, Elem elem, int64_t row, int64_t count, int64_t cols,
                  const void* data);

 private:
  [[noreturn]] void fail(const std::string& what) const;
  Handle create(const std::string& path, Elem elem, const std::vector<int64_t>& dims, int64_t chunk_rows,
                const int32_t* fill = nullptr, bool compress = true);
  std::string path_, tmp_;
  Handle fid_;
  bool committed_ = false;
};

}  // namespace dsa::h5
