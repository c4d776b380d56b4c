// Results <-> a plain dict of numpy arrays: what run() returns and what compare() takes, so a
// kernel's outputs built in Python are checked by the same code as the CLI's result files.
// Shapes and dtypes are checked here; the values (ranges, order, padding) are the comparison's
// "validity" metric, so an invalid pick is a verdict with coordinates, not an exception.
#include "python/src/bindings.hpp"

namespace dsa::py_bind {
namespace {

int tail_count(const Batch& b) {
  int64_t n = 0;
  for (int32_t t : b.tail_rows) n += t;
  return int(n);
}

// Scores: one entry per row, None (empty) for rows without scores.
template <class T>
py::list score_rows(const std::vector<std::vector<T>>& rows) {
  py::list out;
  for (const std::vector<T>& row : rows)
    out.append(row.empty() ? py::object(py::none()) : py::object(new_array(row, {py::ssize_t(row.size())})));
  return out;
}

template <class T>
std::vector<std::vector<T>> score_rows_from(py::handle list, const Batch& b, const std::string& source,
                                            const std::string& dataset) {
  std::vector<std::vector<T>> out;
  for (py::handle row : list) {
    if (row.is_none()) out.emplace_back();
    else out.push_back(copy_array<T>(row, source, dataset + " row " + std::to_string(out.size()), {-1}));
  }
  if (!out.empty() && int(out.size()) != b.rows())
    throw InputError(source, dataset, std::to_string(out.size()) + " rows, the batch has " + std::to_string(b.rows()));
  return out;
}

template <class T>
py::dict scores_by_layer(const Results& results, std::vector<std::vector<T>> LayerResult::*field) {
  py::dict out;
  for (const auto& [id, layer] : results.layers)
    if (!(layer.*field).empty()) out[py::int_(id)] = score_rows(layer.*field);
  return out;
}

void check_layer_id(const Batch& b, int id, const std::string& source, const std::string& dataset) {
  if (!b.layer(id)) throw InputError(source, dataset, "the batch has no layer " + std::to_string(id));
}

}  // namespace

py::dict results_to_dict(const Batch& b, const Results& results) {
  const py::ssize_t r = b.rows();
  py::dict out;
  out["name"] = results.name;
  out["implementation"] = results.implementation;
  out["device"] = results.device;
  out["notes"] = results.notes;
  out["rows_done"] = new_array(results.rows_done, {r});
  out["blocks"] = results.blocks.empty() ? py::object(py::none())
                                         : py::object(new_array(results.blocks, {r, kTopkBlocks}));
  py::dict positions, tails;
  for (const auto& [id, layer] : results.layers) {
    if (!layer.positions.empty()) positions[py::int_(id)] = new_array(layer.positions, {r, b.topk});
    if (!layer.tail_positions.empty())
      tails[py::int_(id)] = new_array(layer.tail_positions, {py::ssize_t(tail_count(b)), b.topk});
  }
  out["positions"] = positions;
  out["tail_positions"] = tails;
  out["dense_scores"] = scores_by_layer(results, &LayerResult::dense_scores);
  out["sparse_scores"] = scores_by_layer(results, &LayerResult::sparse_scores);
  return out;
}

Results results_from_dict(const Batch& b, const py::dict& in, const std::string& source) {
  const py::ssize_t r = b.rows();
  Results out;
  out.name = in["name"].cast<std::string>();
  out.implementation = in["implementation"].cast<std::string>();
  out.device = in["device"].cast<std::string>();
  out.notes = in["notes"].cast<std::string>();
  const std::string group = "/outputs/" + out.name;
  out.rows_done = copy_array<uint8_t>(in["rows_done"], source, group + "/rows_done", {r});
  if (!in["blocks"].is_none()) out.blocks = copy_array<int32_t>(in["blocks"], source, group + "/blocks", {r, kTopkBlocks});
  for (auto [key, value] : in["positions"].cast<py::dict>()) {
    const int id = key.cast<int>();
    const std::string dataset = group + "/" + std::to_string(id) + "/positions";
    check_layer_id(b, id, source, dataset);
    out.layers[id].positions = copy_array<int32_t>(value, source, dataset, {r, b.topk});
  }
  for (auto [key, value] : in["tail_positions"].cast<py::dict>()) {
    const int id = key.cast<int>();
    const std::string dataset = group + "/" + std::to_string(id) + "/tail_positions";
    check_layer_id(b, id, source, dataset);
    out.layers[id].tail_positions = copy_array<int32_t>(value, source, dataset, {tail_count(b), b.topk});
  }
  for (auto [key, value] : in["dense_scores"].cast<py::dict>()) {
    const int id = key.cast<int>();
    const std::string dataset = group + "/" + std::to_string(id) + "/dense_scores";
    check_layer_id(b, id, source, dataset);
    out.layers[id].dense_scores = score_rows_from<float>(value, b, source, dataset);
  }
  for (auto [key, value] : in["sparse_scores"].cast<py::dict>()) {
    const int id = key.cast<int>();
    const std::string dataset = group + "/" + std::to_string(id) + "/sparse_scores";
    check_layer_id(b, id, source, dataset);
    out.layers[id].sparse_scores = score_rows_from<uint16_t>(value, b, source, dataset);
  }
  return out;
}

void bind_results(py::module_& m) {
  // Recorded outputs of a batch file (/outputs/NAME), as the same dicts run() returns.
  m.def("recorded_outputs", [](const Batch& b, const std::string& name) {
    auto it = b.outputs.find(name);
    if (it == b.outputs.end()) throw InputError(b.path, "/outputs/" + name, "no such recorded output");
    Results results = it->second;
    results.name = name;
    return results_to_dict(b, results);
  });
}

}  // namespace dsa::py_bind
