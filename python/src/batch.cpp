// Batch: built from arrays in the engine's layouts (batch-format.md v1), read from and written to
// HDF5 by the same reader and writer as the CLI, and read back as numpy arrays.
#include <algorithm>
#include <memory>

#include "harness/batch/batch_io.hpp"
#include "harness/batch/batch_validate.hpp"
#include "harness/batch/content_id.hpp"
#include "python/src/bindings.hpp"

namespace dsa::py_bind {
namespace {

const char* kFromArrays = "Batch.from_arrays";

// The Python side has already turned torch tensors into numpy arrays and set the defaults.
std::shared_ptr<Batch> from_arrays(const py::dict& attrs, py::handle num_rows, py::handle compressed_len,
                                   py::handle page_table, py::handle compress_len, py::handle pool,
                                   const py::list& layers, py::handle tail_rows) {
  auto batch = std::make_shared<Batch>();
  Batch& b = *batch;
  b.topk = attrs["topk"].cast<int>();
  b.compress_ratio = attrs["compress_ratio"].cast<int>();
  b.source_layer = attrs["source_layer"].cast<int>();
  b.origin = attrs["origin"].cast<std::string>();
  b.description = attrs["description"].cast<std::string>();
  b.num_rows = copy_array<int32_t>(num_rows, kFromArrays, "/requests/num_rows", {-1});
  const py::ssize_t q = py::ssize_t(b.num_rows.size());
  b.compressed_len = copy_array<int32_t>(compressed_len, kFromArrays, "/requests/compressed_len", {q});
  std::vector<py::ssize_t> shape;
  b.page_table = copy_array<int32_t>(page_table, kFromArrays, "/requests/page_table", {q, -1}, &shape);
  b.table_width = int(shape[1]);
  if (!tail_rows.is_none()) b.tail_rows = copy_array<int32_t>(tail_rows, kFromArrays, "/requests/tail_rows", {q});
  b.compress_len = copy_array<int32_t>(compress_len, kFromArrays, "/rows/compress_len", {-1});
  b.pool = copy_array<uint8_t>(pool, kFromArrays, "/index_k/pool", {-1, -1}, &shape);
  b.pages = shape[0];
  if (shape[1] % kSlotBytes != 0)
    throw InputError(kFromArrays, "/index_k/pool", "row width " + std::to_string(shape[1]) + " is not page_size * 68");
  b.page_size = int(shape[1] / kSlotBytes);
  const py::ssize_t r = py::ssize_t(b.compress_len.size());
  for (py::handle item : layers) {
    const py::tuple t = item.cast<py::tuple>();
    Layer layer;
    layer.id = t[0].cast<int>();
    const std::string where = "/layers/" + std::to_string(layer.id);
    bool ok = false;
    layer.role = parse_role(t[1].cast<std::string>(), &ok);
    if (!ok) throw InputError(kFromArrays, where, "role '" + t[1].cast<std::string>() + "' is not source, consumer or plain");
    layer.q = copy_array<uint8_t>(t[2], kFromArrays, where + "/q", {r, kHeads, kPackedDim});
    layer.q_scale = copy_array<uint8_t>(t[3], kFromArrays, where + "/q_scale", {r, kHeads, kScaleGroups});
    layer.weights = copy_array<float>(t[4], kFromArrays, where + "/weights", {r, kHeads});
    b.layers.push_back(std::move(layer));
  }
  std::sort(b.layers.begin(), b.layers.end(), [](const Layer& x, const Layer& y) { return x.id < y.id; });
  validate_batch(b, kFromArrays);
  b.finalize();
  return batch;
}

py::dict layer_arrays(const Batch& b, const Layer& layer) {
  const py::ssize_t r = b.rows();
  py::dict out;
  out["role"] = role_name(layer.role);
  out["q"] = new_array(layer.q, {r, kHeads, kPackedDim});
  out["q_scale"] = new_array(layer.q_scale, {r, kHeads, kScaleGroups});
  out["weights"] = new_array(layer.weights, {r, kHeads});
  return out;
}

}  // namespace

py::dict batch_arrays(const Batch& b) {
  const py::ssize_t q = b.requests();
  py::dict out;
  out["num_rows"] = new_array(b.num_rows, {q});
  out["compressed_len"] = new_array(b.compressed_len, {q});
  out["page_table"] = new_array(b.page_table, {q, b.table_width});
  out["tail_rows"] = b.tail_rows.empty() ? py::object(py::none()) : py::object(new_array(b.tail_rows, {q}));
  out["compress_len"] = new_array(b.compress_len, {py::ssize_t(b.rows())});
  out["pool"] = new_array(b.pool, {py::ssize_t(b.pages), py::ssize_t(b.page_size) * kSlotBytes});
  py::dict layers;
  for (const Layer& layer : b.layers) layers[py::int_(layer.id)] = layer_arrays(b, layer);
  out["layers"] = layers;
  return out;
}

namespace {

py::dict attributes(const Batch& b) {
  py::dict out;
  out["format_version"] = b.format_version;
  out["topk"] = b.topk;
  out["page_size"] = b.page_size;
  out["compress_ratio"] = b.compress_ratio;
  out["source_layer"] = b.source_layer;
  out["origin"] = b.origin;
  out["description"] = b.description;
  return out;
}

std::vector<std::string> output_names(const Batch& b) {
  std::vector<std::string> names;
  for (const auto& [name, results] : b.outputs) names.push_back(name);
  return names;
}

}  // namespace

void bind_batch(py::module_& m) {
  py::class_<Batch, std::shared_ptr<Batch>>(m, "Batch", "A batch (format v1) held in C++ memory")
      .def_static("from_arrays", &from_arrays)
      .def_static("read", [](const std::string& path) { return std::make_shared<Batch>(read_batch(path)); },
                  py::call_guard<py::gil_scoped_release>())
      .def("write", [](const Batch& b, const std::string& path) { write_batch(path, b); }, py::call_guard<py::gil_scoped_release>())
      .def("content_id", [](const Batch& b) { return content_id(b); })
      .def("arrays", &batch_arrays)
      .def("attributes", &attributes)
      .def("output_names", &output_names)
      .def_property_readonly("path", [](const Batch& b) { return b.path; })
      .def_property_readonly("rows", &Batch::rows)
      .def_property_readonly("requests", &Batch::requests)
      .def_property_readonly("topk", [](const Batch& b) { return b.topk; })
      .def_property_readonly("layer_ids", [](const Batch& b) {
        std::vector<int> ids;
        for (const Layer& layer : b.layers) ids.push_back(layer.id);
        return ids;
      });
}

}  // namespace dsa::py_bind
