// Shared by the example plugins: a plugin (include/dsa_harness/plugin.h) around one of this
// project's implementations. The arrays the harness passes are copied into a dsa::Batch, the
// wrapped implementation runs on the wanted rows at the first call (it computes every layer in
// the engine's order), and publish / select / plain hand out that run's layers. A plugin of your
// own computes in publish / select / plain instead; only plugin.h is its interface.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/implementation.hpp"
#include "dsa_harness/plugin.h"

namespace dsa_example {

using Factory = dsa::ImplementationPtr (*)();

struct State {
  dsa::Batch batch;
  dsa::RunOptions options;
  dsa::Results results;
  bool ran = false;
  double host_ms = 0;
};

template <class T>
std::vector<T> copy(const T* data, size_t n) { return data ? std::vector<T>(data, data + n) : std::vector<T>(); }

inline dsa::Batch batch_of(const dsa_plugin_batch& in) {
  dsa::Batch b;
  const size_t q = size_t(in.requests), r = size_t(in.rows);
  b.topk = in.topk;
  b.page_size = in.page_size;
  b.compress_ratio = in.compress_ratio;
  b.num_rows = copy(in.num_rows, q);
  b.compressed_len = copy(in.compressed_len, q);
  b.page_table = copy(in.page_table, q * size_t(in.table_width));
  b.table_width = in.table_width;
  b.tail_rows = copy(in.tail_rows, q);
  b.compress_len = copy(in.compress_len, r);
  b.pool = copy(in.pool, size_t(in.pages) * size_t(in.page_size) * DSA_PLUGIN_SLOT_BYTES);
  b.pages = in.pages;
  for (int32_t i = 0; i < in.layer_count; ++i) {
    const dsa_plugin_layer& l = in.layers[i];
    dsa::Layer layer;
    layer.id = l.id;
    layer.role = l.role == DSA_PLUGIN_SOURCE ? dsa::Role::source : l.role == DSA_PLUGIN_CONSUMER ? dsa::Role::consumer : dsa::Role::plain;
    if (layer.role == dsa::Role::source) b.source_layer = l.id;
    layer.q = copy(l.q, r * DSA_PLUGIN_HEADS * DSA_PLUGIN_PACKED_DIM);
    layer.q_scale = copy(l.q_scale, r * DSA_PLUGIN_HEADS * DSA_PLUGIN_SCALE_GROUPS);
    layer.weights = copy(l.weights, r * DSA_PLUGIN_HEADS);
    b.layers.push_back(std::move(layer));
  }
  b.finalize();
  return b;
}

// C++ exceptions must not cross the C ABI: each entry point turns them into an error text.
template <class Fn>
int guarded(char* error, Fn fn) {
  try {
    fn();
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(error, DSA_PLUGIN_ERROR_BYTES, "%s", e.what());
    return 1;
  }
}

template <Factory make>
struct Plugin {
  static void* create(const dsa_plugin_batch* in, char* error) {
    State* state = nullptr;
    guarded(error, [&] {
      auto s = std::make_unique<State>();
      s->batch = batch_of(*in);
      for (int32_t r = 0; r < in->rows; ++r)
        if (in->rows_wanted[r]) s->options.rows.push_back(r);
      s->options.timing = true;
      state = s.release();
    });
    return state;
  }
  static dsa::LayerResult& run(void* p, int32_t layer) {
    State& s = *static_cast<State*>(p);
    if (!s.ran) {
      const auto start = std::chrono::steady_clock::now();
      dsa::ImplementationPtr impl = make();
      const dsa::Support support = impl->supported();
      if (!support.ok) throw std::runtime_error(impl->name() + " cannot run here: " + support.reason);
      s.results = impl->run(s.batch, s.options);
      s.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      s.ran = true;
    }
    return s.results.layers.at(layer);
  }
  static void copy_out(const std::vector<int32_t>& from, int32_t* to) { std::copy(from.begin(), from.end(), to); }

  static int publish(void* p, const dsa_plugin_layer* source, int32_t* blocks, int32_t* positions, char* error) {
    return guarded(error, [&] {
      copy_out(run(p, source->id).positions, positions);
      copy_out(static_cast<State*>(p)->results.blocks, blocks);
    });
  }
  static int select(void* p, const dsa_plugin_layer* consumer, const int32_t*, int32_t* positions, int32_t* tails,
                    char* error) {
    return guarded(error, [&] {
      const dsa::LayerResult& lr = run(p, consumer->id);
      copy_out(lr.positions, positions);
      if (tails) copy_out(lr.tail_positions, tails);
    });
  }
  static int plain(void* p, const dsa_plugin_layer* layer, int32_t* positions, char* error) {
    return guarded(error, [&] { copy_out(run(p, layer->id).positions, positions); });
  }
  // The wrapped implementation's own kernel timings, else the whole run on the host clock.
  static int32_t timings(void* p, dsa_plugin_timing* out, int32_t capacity) {
    const State& s = *static_cast<State*>(p);
    std::vector<dsa::KernelTiming> all = s.results.timings;
    if (all.empty()) all.push_back({"run", "all", 1, 1, s.host_ms, s.host_ms, s.host_ms, 0, 0});
    int32_t n = 0;
    for (const dsa::KernelTiming& t : all) {
      if (n == capacity) break;
      dsa_plugin_timing& o = out[n++];
      std::memset(&o, 0, sizeof o);
      std::snprintf(o.kernel, sizeof o.kernel, "example:%s", t.kernel.c_str());  // not the wrapped one's own row
      std::snprintf(o.layer, sizeof o.layer, "%s", t.layer.c_str());
      o.calls = t.calls;
      o.samples = std::max(1, t.samples);
      o.median_ms = t.median_ms;
      o.min_ms = t.min_ms;
      o.max_ms = t.max_ms;
      o.flops = t.flops;
      o.bytes = t.bytes;
    }
    return n;
  }
  static void destroy(void* p) { delete static_cast<State*>(p); }
};

}  // namespace dsa_example
