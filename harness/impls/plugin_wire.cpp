#include "harness/impls/plugin_wire.hpp"

#include <cstring>

#include "harness/impls/plugin.hpp"

namespace dsa {
namespace {

constexpr char kMagic[] = "DSAPLUG1";

class Writer {
 public:
  template <class T>
  void value(T v) { bytes_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  template <class T>
  void vector(const std::vector<T>& v) {
    value<uint64_t>(v.size());
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void text(const std::string& s) { vector(std::vector<char>(s.begin(), s.end())); }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& who) : bytes_(bytes), who_(who) {}
  template <class T>
  T value() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  // `expected`: the sizes the batch allows (a vector may also be empty where `empty_ok`).
  template <class T>
  std::vector<T> vector(const std::string& what, uint64_t expected, bool empty_ok) {
    const uint64_t n = value<uint64_t>();
    if (n != expected && !(empty_ok && n == 0))
      throw PluginError(who_ + ": " + what + " holds " + std::to_string(n) + " values, not " + std::to_string(expected));
    need(n * sizeof(T));
    std::vector<T> v(n);
    if (n) std::memcpy(v.data(), bytes_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return v;
  }
  std::string text() {
    const uint64_t n = value<uint64_t>();
    need(n);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void need(uint64_t n) const {
    if (n > bytes_.size() - at_) throw PluginError(who_ + ": the plugin host's output is truncated");
  }
  const std::string& bytes_;
  const std::string& who_;
  size_t at_ = 0;
};

void write_timing(Writer& w, const KernelTiming& t) {
  w.text(t.kernel);
  w.text(t.layer);
  w.value<int32_t>(t.calls);
  w.value<int32_t>(t.samples);
  for (double d : {t.median_ms, t.min_ms, t.max_ms, t.flops, t.bytes}) w.value(d);
}

KernelTiming read_timing(Reader& r) {
  KernelTiming t;
  t.kernel = r.text();
  t.layer = r.text();
  t.calls = r.value<int32_t>();
  t.samples = r.value<int32_t>();
  for (double* d : {&t.median_ms, &t.min_ms, &t.max_ms, &t.flops, &t.bytes}) *d = r.value<double>();
  return t;
}

}  // namespace

std::string encode_results(const Results& results) {
  Writer w;
  w.text(kMagic);
  w.text(results.implementation);
  w.text(results.device);
  w.vector(results.rows_done);
  w.vector(results.blocks);
  w.value<uint32_t>(uint32_t(results.layers.size()));
  for (const auto& [id, layer] : results.layers) {
    w.value<int32_t>(id);
    w.vector(layer.positions);
    w.vector(layer.tail_positions);
  }
  w.value<uint32_t>(uint32_t(results.timings.size()));
  for (const KernelTiming& t : results.timings) write_timing(w, t);
  return w.take();
}

Results decode_results(const std::string& bytes, const Batch& batch, const std::string& who) {
  Reader r(bytes, who);
  if (r.text() != kMagic) throw PluginError(who + ": the plugin host's output does not start with " + kMagic);
  Results out;
  out.implementation = r.text();
  out.device = r.text();
  const uint64_t rows = uint64_t(batch.rows()), k = uint64_t(batch.topk);
  out.rows_done = r.vector<uint8_t>("rows_done", rows, false);
  out.blocks = r.vector<int32_t>("blocks", rows * kTopkBlocks, true);
  const uint32_t layers = r.value<uint32_t>();
  for (uint32_t i = 0; i < layers; ++i) {
    const int32_t id = r.value<int32_t>();
    if (!batch.layer(id)) throw PluginError(who + ": outputs for layer " + std::to_string(id) + ", which the batch lacks");
    const std::string at = "layer " + std::to_string(id);
    out.layers[id].positions = r.vector<int32_t>(at + " positions", rows * k, true);
    out.layers[id].tail_positions = r.vector<int32_t>(at + " tail_positions", uint64_t(batch.total_tail_rows) * k, true);
  }
  const uint32_t timings = r.value<uint32_t>();
  for (uint32_t i = 0; i < timings; ++i) out.timings.push_back(read_timing(r));
  if (!r.done()) throw PluginError(who + ": the plugin host's output has trailing bytes");
  return out;
}

}  // namespace dsa
