#include "gpu/engine/engine.cuh"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <tuple>

#include "gpu/block_amax/block_amax.cuh"
#include "gpu/common/check.cuh"
#include "gpu/common/poison.cuh"
#include "gpu/dense_logits/dense_logits.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"
#include "gpu/dense_logits/wide_keys.cuh"
#include "gpu/gpu_implementations.hpp"
#include "gpu/prep/key_blocks.cuh"
#include "gpu/prep/prep.cuh"
#include "gpu/small_topk/small_topk.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
#include "gpu/topk/source_select.cuh"
#include "gpu/topk/topk.cuh"
#include "core/constants.hpp"

namespace dsa::gpu {
namespace {

__global__ void probe_kernel(int* x) {
  if (x) *x = 1;
}

// dst[i][:] = src[rows[i]][:] (tail tables are the published rows of the tail rows).
__global__ void gather_rows_kernel(const int32_t* src, int width, const int32_t* rows, int n, int32_t* dst) {
  const int i = blockIdx.y;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < width; c += gridDim.x * blockDim.x)
    dst[int64_t(i) * width + c] = src[int64_t(rows[i]) * width + c];
}

void gather_rows(const int32_t* src, int width, const int32_t* rows, int n, int32_t* dst) {
  for_row_pieces(n, [&](int first, int m) {
    gather_rows_kernel<<<dim3((width + 255) / 256, m), 256>>>(src, width, rows + first, m,
                                                             dst + int64_t(first) * width);
    DSA_LAUNCH_CHECK("gather_rows_kernel");
  });
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The rows a run computes, ascending global rows: options.rows, or every row when it is empty.
std::vector<int32_t> selected_rows(const Batch& batch, const RunOptions& options) {
  if (!options.rows.empty()) return std::vector<int32_t>(options.rows.begin(), options.rows.end());
  std::vector<int32_t> all(static_cast<size_t>(batch.rows()));
  for (int r = 0; r < batch.rows(); ++r) all[size_t(r)] = r;
  return all;
}

// Candidate columns of a row of length L (docs/semantics.md, level one): the kept blocks, the
// newest (always kept) holding only (L - 1) % 8 + 1 positions.
int32_t valid_len_of(int32_t L) {
  const int32_t kept = std::min<int32_t>(kTopkBlocks, (L + 7) / 8);
  return L > 0 ? 8 * (kept - 1) + (L - 1) % 8 + 1 : 0;
}

}  // namespace

// The architectures this file was compiled for, e.g. "900,1000" (nvcc's __CUDA_ARCH_LIST__).
#define DSA_STR2(...) #__VA_ARGS__
#define DSA_STR(...) DSA_STR2(__VA_ARGS__)
static const char* compiled_arch_list() {
#ifdef __CUDA_ARCH_LIST__
  return DSA_STR(__CUDA_ARCH_LIST__);
#else
  return "";
#endif
}

std::string unsupported_reason() {
  std::string why = unavailable_reason();
  if (!why.empty()) return why;
  cudaFuncAttributes attr;
  const cudaError_t err = cudaFuncGetAttributes(&attr, probe_kernel);
  cudaGetLastError();
  if (err == cudaErrorInvalidDeviceFunction || err == cudaErrorNoKernelImageForDevice)
    return std::string("kernels not built for this GPU (") + cudaGetErrorString(err) + ")";
  if (err != cudaSuccess) return std::string("CUDA kernel probe failed: ") + cudaGetErrorString(err);
  return "";
}

std::string unavailable_reason() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return std::string("no CUDA device (") + (err != cudaSuccess ? cudaGetErrorString(err) : "none found") + ")";
  }
  int device = 0, major = 0, minor = 0;
  DSA_CUDA_CHECK(cudaGetDevice(&device));
  DSA_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  DSA_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const std::string sm = "sm_" + std::to_string(major * 10 + minor);
  // Machine code for exactly this architecture must be in the binary (no PTX fallback: the
  // 'a' targets are not forward compatible).
  const std::string list = std::string(",") + compiled_arch_list() + ",";
  if (list.find("," + std::to_string(major * 100 + minor * 10) + ",") == std::string::npos)
    return "kernels not built for " + sm + " (built for " + compiled_arch_list() + ")";
  return "";
}

std::string describe_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "none (no CUDA device)";
  }
  int device = 0, driver = 0, runtime = 0;
  cudaGetDevice(&device);
  cudaDeviceProp prop;
  DSA_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device);
  char buf[512];
  snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB, SM clock %d MHz, driver API %d.%d, runtime %d.%d)",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0,
           prop.l2CacheSize >> 20, clock_khz / 1000, driver / 1000, (driver % 1000) / 10, runtime / 1000,
           (runtime % 1000) / 10);
  return buf;
}

std::string GpuEngine::device() const {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "none";
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "cuda";
  return prop.name;
}

Support GpuEngine::supported() const {
  const std::string why = unsupported_reason();
  return {why.empty(), why};
}

GpuEngine::~GpuEngine() { drop_graph(); }

void GpuEngine::drop_graph() {
  if (graph_) cudaGraphExecDestroy(graph_);  // no throw from a destructor path
  graph_ = nullptr;
}

void GpuEngine::time(const std::string& kernel, const Layer* layer, double flops, double bytes,
                     const std::function<void()>& launch) {
  if (!timing_) return;
  timings_->push_back(timer_->measure(kernel_name(kernel), layer ? std::to_string(layer->id) : "all", flops,
                                      bytes, launch));
}

// Output hygiene (gpu/common/poison.cuh), with checks on only: each check synchronises.
void GpuEngine::poison(void* data, int byte, size_t bytes) {
  if (!checks_ || bytes == 0) return;
  ++DeviceMemoryMeter::memsets();
  DSA_CUDA_CHECK(cudaMemsetAsync(data, byte, bytes, stream_));
}

void GpuEngine::check_written(int64_t unwritten, const std::string& kernel) {
  require_written(unwritten, kernel_name(kernel));
}

// Everything a step's device work depends on besides the key and query values: rows, lengths,
// request layout, pool and table sizes, layers, tails.
std::vector<int64_t> GpuEngine::shape_of(const Batch& batch, const std::vector<int32_t>& sel) const {
  std::vector<int64_t> s = {int64_t(path_), batch.topk, batch.page_size, batch.table_width,
                            int64_t(batch.pool.size()), int64_t(batch.page_table.size()), batch.requests(),
                            batch.rows(), int64_t(sel.size()), int64_t(batch.tail_rows.size())};
  for (int32_t r : sel) s.insert(s.end(), {r, batch.compress_len[size_t(r)], batch.tail_index(r)});
  for (int b = 0; b < batch.requests(); ++b)
    s.insert(s.end(), {batch.compressed_len[size_t(b)], batch.request_start[size_t(b)]});
  for (const Layer& l : batch.layers) s.insert(s.end(), {l.id, int64_t(l.role)});
  return s;
}

void GpuEngine::begin(const Batch& batch, const RunOptions& options, Results& out) {
  timings_ = &out.timings;
  published_ = false;
  own_via_blocks_ = false;
  if (capturing_) {
    timing_ = false;
    // The workspace, its inputs and the plan are in place (capture()): record the device work.
    DSA_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    prepare_keys();
    return;
  }
  const std::string why = unsupported_reason();
  if (!why.empty()) throw std::runtime_error(name() + ": " + why);
  DeviceMemoryMeter::reset_peak();
  timing_ = options.timing;
  if (timing_) timer_ = std::make_unique<KernelTimer>(options.timing_samples);
  set_up(batch, options);
  upload_inputs(batch);
  prepare_keys();
}

// Selected rows of the sparse path's source layer scored at once: about 2 GiB of fp32 dense
// scores (chunk-256k: 2048 of 16384 rows; 1 GiB chunks took 1.2 ms more a chunk-256k step, with
// twice the launches of each source kernel, and peaked at 2.64 GiB against 3.76: run 102 in
// bench/results/h200.md). DSA_SOURCE_CHUNK_ROWS sets it (the GPU tests use small chunks on small
// batches).
namespace {
int source_chunk_rows(int nsel, int64_t ld) {
  const int all = std::max(nsel, 1);
  if (const char* env = std::getenv("DSA_SOURCE_CHUNK_ROWS")) {
    const int rows = std::atoi(env);
    if (rows > 0) return std::min(rows, all);
  }
  constexpr int64_t kChunkBytes = int64_t(2) << 30;
  return int(std::clamp<int64_t>(kChunkBytes / (ld * int64_t(sizeof(float))), 1, all));
}
// The most rows the source selects in one launch (publish_once): one thread block a row, so about
// one wave of them; more rows are faster with the stream kernels (level one's next row copied
// while one is selected). DSA_SOURCE_SELECT_ROWS sets it (0: never).
int source_select_rows() {
  if (const char* env = std::getenv("DSA_SOURCE_SELECT_ROWS")) return std::max(std::atoi(env), 0);
  return 2 * current_device_sms();
}
}  // namespace

// The selected rows, their tables and the workspace for this batch's shape. Buffers only grow
// (DeviceBuffer::resize), so a batch of the same shape allocates nothing.
void GpuEngine::set_up(const Batch& batch, const RunOptions& options) {
  sel_ = selected_rows(batch, options);
  const int nsel = int(sel_.size());
  if (nsel > 65535) throw std::runtime_error(name() + ": more than 65535 rows in one run");
  std::vector<int64_t> shape = shape_of(batch, sel_);
  const bool new_shape = shape != shape_;
  if (new_shape) {
    drop_graph();  // its plan and addresses belong to the old shape
    planned_ = false;
    for (auto& [id, slot] : slots_) slot.plan_split.clear(), slot.plan_wgmma.clear();
    shape_ = std::move(shape);
  }
  nreq_ = batch.requests();
  page_size_ = batch.page_size;
  table_width_ = batch.table_width;
  std::vector<int32_t> len(nsel), req(nsel);
  std::vector<int64_t> kcol(nsel);
  max_len_ = 0;
  sum_len_ = 0;
  for (int i = 0; i < nsel; ++i) {
    const int r = sel_[size_t(i)];
    len[size_t(i)] = batch.compress_len[size_t(r)];
    req[size_t(i)] = batch.row_request[size_t(r)];
    kcol[size_t(i)] = batch.request_start[size_t(req[size_t(i)])];
    max_len_ = std::max(max_len_, len[size_t(i)]);
    sum_len_ += len[size_t(i)];
  }
  sel_len_host_ = len;
  sel_req_host_ = req;
  ld_dense_ = round_up(std::max(max_len_, 1), 8);
  ld_keys_ = round_up(std::max((max_len_ + 7) / 8, 1), 4);
  sel_rows_.upload(sel_);
  sel_len_.upload(len);
  sel_req_.upload(req);
  sel_kcol_.upload(kcol);
  use_wgmma_ = dense_wgmma_supported() && std::getenv("DSA_DENSE_PORTABLE") == nullptr;
  uniform_plan_ = std::getenv("DSA_DENSE_PER_HEAD") == nullptr;
  use_sparse_wgmma_ = sparse_wgmma_supported() && std::getenv("DSA_SPARSE_PORTABLE") == nullptr;

  // The tables: the selected rows, then those that are tail rows; valid_len from L (the host has
  // it: no kernel computes it).
  tail_sel_.clear();
  tail_index_.clear();
  for (int i = 0; i < nsel; ++i) {
    const int64_t t = batch.tail_rows.empty() ? -1 : batch.tail_index(sel_[size_t(i)]);
    if (t >= 0) {
      tail_sel_.push_back(i);
      tail_index_.push_back(int32_t(t));
    }
  }
  std::vector<int32_t> rows(static_cast<size_t>(nsel)), valid(static_cast<size_t>(nsel));
  sum_valid_ = 0;
  for (int i = 0; i < nsel; ++i) {
    rows[size_t(i)] = i;
    valid[size_t(i)] = valid_len_of(len[size_t(i)]);
    sum_valid_ += valid[size_t(i)];
  }
  valid_len_host_ = valid;
  sum_valid_table_ = sum_valid_;
  for (int32_t i : tail_sel_) {
    rows.push_back(i);
    valid.push_back(valid[size_t(i)]);
    sum_valid_table_ += valid[size_t(i)];
  }
  const size_t n1 = std::max<size_t>(rows.size(), 1);
  table_rows_host_ = rows;
  table_rows_.upload(rows);
  valid_len_.upload(valid);
  if (!tail_sel_.empty()) tail_rows_.upload(tail_sel_);
  std::vector<int32_t> tail_of(size_t(std::max(nsel, 1)), -1);
  for (size_t t = 0; t < tail_sel_.size(); ++t) tail_of[size_t(tail_sel_[t])] = int32_t(t);
  tail_of_.upload(tail_of);
  blocks_.resize(n1 * kTopkBlocks);
  topk_list_.resize(size_t(std::max(nsel, 1)));
  level_kth_.resize(size_t(std::max(nsel, 1)));

  // Keys: 8 spare columns (a partial last tile may read, and discard, past the last request).
  // Columns the key prep never writes (the spares, gaps between requests) are zeroed once per
  // shape: the key prep of a batch of this shape writes the same columns.
  ncols_ = 0;
  max_lc_ = 0;
  for (int b = 0; b < batch.requests(); ++b) {
    ncols_ = std::max<int64_t>(ncols_, batch.request_start[size_t(b)] + batch.compressed_len[size_t(b)]);
    max_lc_ = std::max(max_lc_, batch.compressed_len[size_t(b)]);
  }
  const size_t cols = size_t(ncols_ + 8);
  if (new_shape) {
    ks_.resize(cols * 128);
    kr_.resize(cols * 128);
    kexp_.resize(cols);
    kscale_.resize(cols);
    ks_.fill_bytes(0, cols * 128);
    kr_.fill_bytes(0, cols * 128);
    kexp_.fill_bytes(0x80, cols);
    kscale_.fill_bytes(0, cols);
  }
  if (key_records()) {
    std::vector<int64_t> req_blk;
    const int64_t nblk = key_block_starts(batch.compressed_len, req_blk);
    // The padding records (kKeyBlockPad) are zeroed once per shape, like the spare key columns.
    const size_t rec = size_t(nblk + kKeyBlockPad) * kKeyBlockBytes, pad = size_t(kKeyBlockPad) * kKeyBlockBytes;
    for (auto [buf, used] : record_layouts())
      if (used) {
        buf->resize(rec);
        if (new_shape) buf->fill_bytes(0, pad, rec - pad);
      }
    kbscale_.resize(size_t(nblk + kKeyBlockPad) * 8);
    if (new_shape) kbscale_.fill_bytes(0, size_t(kKeyBlockPad) * 8, size_t(nblk) * 8);
    req_blk_.upload(req_blk.empty() ? std::vector<int64_t>{0} : req_blk);
  }
  req_fexp_.resize(size_t(std::max(batch.requests(), 1)));
  if (use_wgmma_) {
    wide_count_.resize(size_t(std::max(batch.requests(), 1)));
    wide_list_.resize(size_t(wide_list_capacity(ncols_, batch.requests())));
  }

  // The query operands, shared by the layers in stream order.
  const size_t s1 = size_t(std::max(nsel, 1));
  qs_.resize(s1 * 4096);
  qr_.resize(s1 * 4096);
  qsplit_.resize(s1 * 4096);
  qexp_.resize(s1 * 32);
  qscale_.resize(s1 * 32);
  qmul_.resize(s1 * 32);
  qdouble_.resize(s1 * 32);
  row_fast_.resize(s1);
  if (use_wgmma_) {
    qw_.resize(s1 * 4096);
    qw_mul_.resize(s1 * 32);
    qw_weight_.resize(s1 * 32);
    qw_shift_.resize(s1);
  }
  chunk_rows_ = source_chunk_rows(nsel, ld_dense_);
  bool plain_layers = false;
  for (const Layer& l : batch.layers) plain_layers = plain_layers || l.role == Role::plain;
  // The mask path, --scores and plain layers read whole dense matrices.
  chunked_ = path_ == PathKind::sparse && !options.scores && !plain_layers && chunk_rows_ < nsel;
  select_once_ = !chunked_ && max_len_ <= kSourceSelectMaxLen && nsel <= source_select_rows();
  const size_t drows = chunked_ ? size_t(chunk_rows_) : s1;
  dense_.resize(drows * size_t(ld_dense_));
  // The dense wgmma kernel addresses keys_ with 32-bit offsets (its dense matrix, 8x larger,
  // would not fit a GPU first).
  if (drows * size_t(ld_keys_) > size_t(UINT32_MAX)) throw std::runtime_error(name() + ": too many block keys");
  keys_.resize(drows * size_t(ld_keys_));
  // Level one's published keys, a launch's rows (a chunk, or all): only where a row has more
  // than 2048 blocks to narrow and level one selects in registers (launch_block_topk), and not
  // for the one-launch selection (publish_once), which has its own top-k.
  const char* narrow = std::getenv("DSA_OWN_NARROW");
  narrow_own_ = !select_once_ && batch.topk < kTopkBlocks && (max_len_ + 7) / 8 > kTopkBlocks &&
                block_topk_in_registers(max_len_) && !(narrow != nullptr && std::string(narrow) == "0");
  if (narrow_own_) pick_keys_.resize(drows * kTopkBlocks);
  // Stores skipped only where every reader of the source's scores is the narrowed own top-k.
  // On by default (runs 167-170: 1.8 ms less a step, every check passed); DSA_DENSE_SKIP=0 stores all.
  const char* skip = std::getenv("DSA_DENSE_SKIP");
  skip_stores_ = narrow_own_ && use_wgmma_ && path_ == PathKind::sparse && !options.scores &&
                 !(skip != nullptr && std::string(skip) == "0");
  skip_need_ = batch.topk + 1;
  if (skip_stores_) skip_.resize(drows * kSkipWords);
  if (path_ == PathKind::sparse) sparse_.resize(n1 * kCandidateWidth);
  for (const Layer& l : batch.layers) {
    LayerSlot& slot = slots_[l.id];
    slot.picks.resize(n1 * size_t(batch.topk));
    slot.row_split.resize(s1);
    slot.row_wgmma.resize(s1);
  }
}

// The step's inputs, copied into the workspace before its device work (a graph reads them there).
void GpuEngine::upload_inputs(const Batch& batch) {
  pool_.upload(batch.pool);
  table_.upload(batch.page_table);
  req_len_.upload(batch.compressed_len);
  req_start_.upload(std::vector<int64_t>(batch.request_start.begin(), batch.request_start.end()));
  const int nsel = int(sel_.size());
  std::vector<float> w(size_t(nsel) * kHeads);
  for (const Layer& layer : batch.layers) {
    LayerSlot& slot = slots_[layer.id];
    slot.q.upload(layer.q);
    slot.q_scale.upload(layer.q_scale);
    for (int i = 0; i < nsel; ++i)
      std::copy_n(layer.weight_row(sel_[size_t(i)]), kHeads, w.begin() + int64_t(i) * kHeads);
    slot.weights.upload(w);
  }
}

// Key operands of every request: int8 forms and scales, the exponent ranges (wgmma route only),
// and the per-block key records of gpu-sparse and of the dense wgmma kernel (launch_key_blocks).
void GpuEngine::prepare_keys() {
  KeyPrepArgs a{pool_.get(), page_size_, table_.get(), table_width_, req_len_.get(), req_start_.get(),
                nreq_, max_lc_, ks_.get(), kr_.get(), kexp_.get(), kscale_.get()};
  launch_key_prep(a);
  time("key_prep", nullptr, 0, double(ncols_) * (68 + 2 * 128 + 8), [&] { launch_key_prep(a); });
  // The exponent ranges and wide-key lists serve the dense wgmma route alone (its admission in the
  // query prep, launch_dense_wide).
  if (use_wgmma_)
    launch_request_keys(kscale_.get(), req_start_.get(), req_len_.get(), nreq_, req_fexp_.get(), wide_count_.get(),
                        wide_list_.get());
  if (key_records()) {
    const auto layouts = record_layouts();
    auto used = [](const auto& layout) { return layout.second ? layout.first->get() : nullptr; };
    const KeyRecordOut out{used(layouts[0]), used(layouts[1]), kbscale_.get()};
    auto blocks = [&] {
      launch_key_blocks(ks_.get(), kscale_.get(), req_start_.get(), req_len_.get(), req_blk_.get(), nreq_, max_lc_,
                        out);
    };
    blocks();
    const int copies = int(layouts[0].second) + int(layouts[1].second);
    time("key_blocks", nullptr, 0, double(ncols_) * (128 + 4) * (1 + copies), blocks);  // read once, a copy each
  }
}

// Row tiles of the dense kernels: the rows the query prep admitted to the wgmma route in tiles of
// up to 4 of one request, the others in tiles of up to 8 of one request (the portable kernel). A
// wgmma tile holds rows of one plan class (row_wgmma - 1, dense_wgmma.cuh: the k-step order,
// whether a head multiplies before position 1 or 2, or one multiplier a row): the kernel runs a
// whole tile in one order, and in its most expensive row's mode.
void GpuEngine::build_dense_tiles(LayerSlot& slot) {
  constexpr int kClasses = kWgmmaClasses;
  const int nsel = int(sel_.size());
  std::vector<int32_t> wrows, rest, first, count;
  std::vector<int32_t> part[kClasses];  // this chunk's wgmma tiles of each class
  int wreq[kClasses], wfill[kClasses], nw2 = 0, nreordered = 0, nuniform = 0;
  std::fill_n(wreq, kClasses, -1);
  auto pad = [](std::vector<int32_t>& v) { while (v.size() % kWgmmaTileRows != 0) v.push_back(-1); };
  auto flush = [&] {  // no tile spans two chunks
    for (int k = 0; k < kClasses; ++k) {
      pad(part[k]);
      wrows.insert(wrows.end(), part[k].begin(), part[k].end());
      part[k].clear();
      wfill[k] = kWgmmaTileRows;
    }
  };
  bool fresh = false;  // the next portable row starts a chunk
  slot.wtile_chunk.clear();
  slot.tile_chunk.clear();
  slot.rest_chunk.clear();
  for (int i = 0; i < nsel; ++i) {
    const int req = sel_req_host_[size_t(i)];
    if (i % chunk_rows_ == 0) {
      flush();
      slot.wtile_chunk.push_back(int32_t(wrows.size()) / kWgmmaTileRows);
      slot.tile_chunk.push_back(int32_t(first.size()));
      slot.rest_chunk.push_back(int32_t(rest.size()));
      fresh = true;
    }
    const int plan = use_wgmma_ ? slot.plan_wgmma[size_t(i)] : 0;
    if (plan != 0) {
      const int k = plan - 1;
      nw2 += class_early(k);
      nreordered += class_order(k) != 0;
      nuniform += k == kUniformClass;
      if (req != wreq[k] || wfill[k] == kWgmmaTileRows) {
        pad(part[k]);
        wreq[k] = req;
        wfill[k] = 0;
      }
      part[k].push_back(i);
      ++wfill[k];
    } else {
      if (fresh || sel_req_host_[size_t(rest.back())] != req || count.back() == kDenseTileRows) {
        fresh = false;
        first.push_back(int32_t(rest.size()));
        count.push_back(0);
      }
      rest.push_back(i);
      ++count.back();
    }
  }
  flush();
  slot.nwtiles = int(wrows.size()) / kWgmmaTileRows;
  slot.wtile_chunk.push_back(slot.nwtiles);
  slot.tile_chunk.push_back(int32_t(first.size()));
  slot.rest_chunk.push_back(int32_t(rest.size()));
  const int nw = nsel - int(rest.size());
  dense_notes_ = "dense: " + std::to_string(nw) + " of " + std::to_string(nsel) + " rows on wgmma m64n128k32 (" +
                 std::to_string(nuniform) + " with one multiplier a row, " + std::to_string(nw2) +
                 " multiplying before groups 1-2, " + std::to_string(nreordered) +
                 " in another k-step order), " + std::to_string(rest.size()) + " on mma.sync; ";
  slot.ntiles = int(first.size());
  if (slot.ntiles > kMaxGridRows || slot.nwtiles > kMaxGridRows) throw std::runtime_error(name() + ": too many row tiles for one launch");
  const size_t n1 = size_t(std::max(nsel, 1));  // the bounds: the lists' sizes vary with the data
  slot.wtile_rows.resize(n1 * kWgmmaTileRows);
  slot.tile_rows.resize(n1);
  slot.tile_first.resize(n1);
  slot.tile_count.resize(n1);
  slot.wtile_rows.upload(wrows.empty() ? std::vector<int32_t>{-1} : wrows);
  slot.tile_rows.upload(rest.empty() ? std::vector<int32_t>{0} : rest);
  slot.tile_first.upload(first.empty() ? std::vector<int32_t>{0} : first);
  slot.tile_count.upload(count.empty() ? std::vector<int32_t>{0} : count);
}

// The layer's query operands. The dense kernels' row tiles depend on the wgmma admission of each
// row: a plain run reads it back and builds them; a capture reuses them (the plan).
void GpuEngine::prep_query(const Layer& layer, bool dense) {
  const int nsel = int(sel_.size());
  LayerSlot& slot = slots_[layer.id];
  const bool wgmma = use_wgmma_ && dense;  // the wgmma form serves the dense kernel alone
  QueryPrepArgs a{slot.q.get(),    slot.q_scale.get(), sel_rows_.get(),  nsel,          qs_.get(),
                  qr_.get(),       qexp_.get(),        qscale_.get(),    row_fast_.get(), qsplit_.get(),
                  qmul_.get(),     qdouble_.get(),     slot.row_split.get(), slot.weights.get(), sel_req_.get(), req_fexp_.get(),
                  wgmma ? qw_.get() : nullptr, qw_mul_.get(), qw_weight_.get(), qw_shift_.get(),
                  slot.row_wgmma.get()};
  a.uniform_plan = uniform_plan_;
  launch_query_prep(a);
  if (dense && !capturing_) {
    // row_wgmma is written for every row with the wgmma form, and read only then.
    slot.plan_wgmma = wgmma ? slot.row_wgmma.to_host(size_t(nsel)) : std::vector<int32_t>{};
    build_dense_tiles(slot);
  }
  time("query_prep", &layer, 0, double(nsel) * 32 * (68 + 3 * 128 + 16), [&] { launch_query_prep(a); });
}

GpuEngine::Chunk GpuEngine::chunk(int index) const {
  const int first = index * chunk_rows_;
  return Chunk{first, std::min(chunk_rows_, int(sel_.size()) - first), index};
}

int GpuEngine::chunks() const { return (int(sel_.size()) + chunk_rows_ - 1) / chunk_rows_; }

// The dense kernels over the tiles of chunk c (index -1: every row), chunk row i at dense_ row
// i - c.first.
void GpuEngine::launch_dense(const Layer& layer, const Chunk& c, bool wgmma, bool portable, bool keys) {
  LayerSlot& t = slots_[layer.id];
  const int p0 = c.index < 0 ? 0 : t.tile_chunk[size_t(c.index)];
  const int p1 = c.index < 0 ? t.ntiles : t.tile_chunk[size_t(c.index) + 1];
  DenseLogitsArgs a{qs_.get(), qr_.get(), qexp_.get(), qscale_.get(), row_fast_.get(), qsplit_.get(),
                    qmul_.get(), t.row_split.get(), t.weights.get(),
                    ks_.get(), kr_.get(), kexp_.get(), kscale_.get(), t.tile_rows.get(), t.tile_first.get() + p0,
                    t.tile_count.get() + p0, p1 - p0, sel_len_.get(), sel_kcol_.get(), max_len_, dense_.get(),
                    ld_dense_, c.first};
  // The source's wide keys wait for publish_once's selection when it runs.
  if (wgmma) {
    const DenseWgmmaArgs w = wgmma_args(layer, c, keys);
    if (w.skip != nullptr) skip_.fill_bytes(0, size_t(c.count) * kSkipWords);
    launch_dense_wgmma(w, !(select_once_ && layer.role == Role::source));
  }
  if (portable) launch_dense_logits(a);
}

// The dense wgmma kernel's operands for the tiles of chunk c (index -1: every row).
DenseWgmmaArgs GpuEngine::wgmma_args(const Layer& layer, const Chunk& c, bool keys) const {
  const LayerSlot& t = slots_.at(layer.id);
  const int w0 = c.index < 0 ? 0 : t.wtile_chunk[size_t(c.index)];
  const int w1 = c.index < 0 ? t.nwtiles : t.wtile_chunk[size_t(c.index) + 1];
  return DenseWgmmaArgs{qw_.get(), qw_mul_.get(), qw_weight_.get(), qw_shift_.get(),
                        t.wtile_rows.get() + int64_t(w0) * kWgmmaTileRows, w1 - w0, qr_.get(), qexp_.get(),
                        qscale_.get(), t.weights.get(), kr_.get(), kexp_.get(), kscale_.get(), sel_len_.get(),
                        sel_kcol_.get(), sel_req_.get(), wide_count_.get(), wide_list_.get(), kdfrag_.get(),
                        kbscale_.get(), req_blk_.get(), max_len_, dense_.get(), ld_dense_, c.first,
                        keys ? keys_.get() : nullptr, ld_keys_,
                        keys && skip_stores_ && layer.role == Role::source ? skip_.get() : nullptr, skip_need_};
}

void GpuEngine::portable_amax(const Layer& layer, const Chunk& c) {
  const LayerSlot& t = slots_[layer.id];
  const int r0 = c.index < 0 ? 0 : t.rest_chunk[size_t(c.index)];
  const int r1 = c.index < 0 ? t.rest_chunk.back() : t.rest_chunk[size_t(c.index) + 1];
  launch_block_amax(dense_.get(), ld_dense_, sel_len_.get(), t.tile_rows.get() + r0, r1 - r0, c.first, max_len_,
                    keys_.get(), ld_keys_);
}

// Every block key of chunk c written, and equal to the maximum of its dense scores (the fused
// epilogue's check).
void GpuEngine::check_keys(const Chunk& c) {
  check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(keys_.get()), ld_keys_, c.count,
                                 sel_len_.get() + c.first, 8, 0, 0xFFFFFFFFu),
                "block_amax");
  const KeyMismatches bad = count_block_key_mismatches(dense_.get(), ld_dense_, sel_len_.get(), c.count, c.first,
                                                       max_len_, keys_.get(), ld_keys_,
                                                       skip_stores_ ? skip_.get() : nullptr);
  if (skip_stores_) {
    skip_below_ += bad.below;
    for (int i = c.first; i < c.first + c.count; ++i) skip_blocks_ += (sel_len_host_[size_t(i)] + 7) / 8;
  }
  if (bad.count != 0)
    throw std::runtime_error(kernel_name("block_amax") + ": " + std::to_string(bad.count) +
                             " block keys differ from the maximum of their dense scores" +
                             (skip_stores_ ? " (or a stored block holds an unwritten score)" : "") +
                             ", the first at selected row " + std::to_string(bad.row) + ", block " +
                             std::to_string(bad.block));
}

// The least bytes portable_amax moves: the whole matrix where the wgmma kernel computes no keys;
// where it does, the few portable rows go unmeasured (0: no bandwidth figure).
double GpuEngine::amax_bytes(const Layer& layer, int64_t sum_blocks) const {
  return slots_.at(layer.id).nwtiles > 0 ? 0.0 : double(sum_len_) * 4 + double(sum_blocks) * 4;
}

void GpuEngine::dense_logits(const Layer& layer, bool keys) {
  const int nsel = int(sel_.size());
  LayerSlot& t = slots_[layer.id];
  const Chunk all{0, nsel, -1};
  auto launch = [&] { launch_dense(layer, all, true, true, keys); };
  poison(dense_.get(), kPoisonByteFloat, size_t(nsel) * size_t(ld_dense_) * sizeof(float));
  launch();
  if (checks_ && !(keys && skip_stores_))  // else check_keys checks the stored blocks
    check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(dense_.get()), ld_dense_, nsel, sel_len_.get(),
                                   1, 0, 0xFFFFFFFFu),
                  "dense_logits");
  time("dense_logits", &layer, 2.0 * kHeads * kHeadDim * double(sum_len_),
       double(sum_len_) * 4 + double(ncols_) * 68 + double(nsel) * kHeads * 68, launch);
  if (t.nwtiles > 0 && t.ntiles > 0) {  // both routes ran: each one's share
    time("dense_logits.wgmma", &layer, 0, 0, [&] { launch_dense(layer, all, true, false, keys); });
    time("dense_logits.mma_sync", &layer, 0, 0, [&] { launch_dense(layer, all, false, true, keys); });
  }
}

// Rows first_row.. of `picks` ([rows][k] on the device) to dst rows rows_out[i] (on the host).
void GpuEngine::store_positions(const DeviceBuffer<int32_t>& picks, size_t first_row,
                                const std::vector<int32_t>& rows_out, int k, std::vector<int32_t>& dst) {
  if (rows_out.empty()) return;
  std::vector<int32_t> host(rows_out.size() * size_t(k));
  picks.download(host.data(), host.size(), first_row * size_t(k));
  for (size_t i = 0; i < rows_out.size(); ++i)
    std::copy_n(host.begin() + int64_t(i) * k, k, dst.begin() + int64_t(rows_out[i]) * k);
}

void GpuEngine::own_topk(const Batch& batch, const Layer& layer) {
  const int nsel = int(sel_.size()), k = batch.topk;
  // On the source, level one is published first and narrows the search (launch_own_topk);
  // plain layers have no level one and scan whole rows.
  const bool via_blocks = published_ && layer.role == Role::source;
  own_via_blocks_ = own_via_blocks_ || via_blocks;
  DeviceBuffer<int32_t>& picks = slots_[layer.id].picks;
  auto launch = [&] {
    if (via_blocks)
      launch_own_topk(dense_.get(), ld_dense_, sel_len_.get(), nsel, k, level_kth_.get(), blocks_.get(),
                      valid_len_.get(), picks.get(), topk_list_.get(), pick_keys());
    else
      launch_topk_dense(dense_.get(), ld_dense_, sel_len_.get(), nsel, k, picks.get());
  };
  poison(picks.get(), kPoisonByteInt, size_t(nsel) * k * sizeof(int32_t));
  launch();
  if (checks_)
    check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(picks.get()), k, nsel, nullptr, 1, k,
                                   0xA5A5A5A5u),
                  "topk");
  time("topk", &layer, 0, double(via_blocks ? sum_valid_ : sum_len_) * 4 + double(nsel) * k * 4, launch);
}

void GpuEngine::copy_dense_scores(const Batch& batch, const Layer& layer, Results& out) {
  LayerResult& lr = out.layers[layer.id];
  lr.dense_scores.assign(size_t(batch.rows()), {});
  for (size_t i = 0; i < sel_.size(); ++i) {
    std::vector<float>& row = lr.dense_scores[size_t(sel_[i])];
    row.resize(size_t(sel_len_host_[i]));
    dense_.download(row.data(), row.size(), i * size_t(ld_dense_));
  }
}

void GpuEngine::publish(const Batch& batch, const Layer& source, const RunOptions& options, Results& out) {
  const int nsel = int(sel_.size()), ntail = int(tail_sel_.size());
  prep_query(source, true);
  if (chunked_) return publish_chunked(batch, source);
  // Level one: block keys (the dense wgmma kernel's epilogue, portable_amax for the other rows),
  // top-2048 with the ascending write (the block sort); valid_len came from L (set_up).
  poison(keys_.get(), kPoisonByteFloat, size_t(nsel) * size_t(ld_keys_) * sizeof(float));
  dense_logits(source, true);
  int64_t sum_blocks = 0;
  for (int L : sel_len_host_) sum_blocks += (L + 7) / 8;
  const Chunk all{0, nsel, -1};
  portable_amax(source, all);
  time("block_amax", &source, 0, amax_bytes(source, sum_blocks), [&] { portable_amax(source, all); });
  if (select_once_) return publish_once(batch, source, options, out, sum_blocks);
  if (options.scores) copy_dense_scores(batch, source, out);
  if (checks_) check_keys(all);

  poison(blocks_.get(), kPoisonByteInt, size_t(nsel + ntail) * kTopkBlocks * sizeof(int32_t));
  launch_block_topk(keys_.get(), ld_keys_, sel_len_.get(), nsel, max_len_, blocks_.get(), level_kth(batch), pick_keys());
  // The tail table: the published rows of the tail rows, after the selected rows' (one table).
  if (ntail > 0) gather_rows(blocks_.get(), kTopkBlocks, tail_rows_.get(), ntail, blocks_.get() + int64_t(nsel) * kTopkBlocks);
  if (checks_)
    check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(blocks_.get()), kTopkBlocks, nsel + ntail,
                                   nullptr, 1, kTopkBlocks, 0xA5A5A5A5u),
                  "block_topk");
  time("block_topk", &source, 0, double(sum_blocks) * 4 + double(nsel) * kTopkBlocks * 4,
       [&] {
         launch_block_topk(keys_.get(), ld_keys_, sel_len_.get(), nsel, max_len_, blocks_.get(), level_kth(batch),
                           pick_keys());
       });
  published_ = true;
  own_topk(batch, source);
}

// Few rows: the wide keys of the wgmma rows (their dense scores and block keys), level one, the
// tail copy and the own top-k in one launch; the same outputs as publish's launches.
void GpuEngine::publish_once(const Batch& batch, const Layer& source, const RunOptions& options, Results& out,
                             int64_t sum_blocks) {
  const int nsel = int(sel_.size()), ntail = int(tail_sel_.size()), k = batch.topk;
  LayerSlot& slot = slots_[source.id];
  const Chunk all{0, nsel, -1};
  const SourceSelectArgs a{wgmma_args(source, all, true), use_wgmma_ ? slot.row_wgmma.get() : nullptr,
                           keys_.get(), ld_keys_, sel_len_.get(), nsel, blocks_.get(), level_kth(batch),
                           ntail > 0 ? tail_of_.get() : nullptr, dense_.get(), ld_dense_, valid_len_.get(), k,
                           slot.picks.get(), topk_list_.get()};
  poison(blocks_.get(), kPoisonByteInt, size_t(nsel + ntail) * kTopkBlocks * sizeof(int32_t));
  poison(slot.picks.get(), kPoisonByteInt, size_t(nsel) * k * sizeof(int32_t));
  launch_source_select(a);
  if (checks_) {
    check_keys(all);
    check_published(slot, k);
  }
  time("source_select", &source, 0,
       double(sum_blocks) * 4 + double(nsel + ntail) * kTopkBlocks * 4 + double(sum_valid_) * 4 + double(nsel) * k * 4,
       [&] { launch_source_select(a); });
  published_ = true;
  own_via_blocks_ = true;
  if (options.scores) copy_dense_scores(batch, source, out);
}

// The sparse path's source layer a chunk of rows at a time (set_up): dense scores, block amax,
// block top-2048 and the own top-k of one chunk before the next, so the [rows x context] fp32
// matrix never exists whole (chunk-256k: 16 GiB whole, 1 GiB a chunk).
void GpuEngine::publish_chunked(const Batch& batch, const Layer& source) {
  const int nsel = int(sel_.size()), ntail = int(tail_sel_.size()), k = batch.topk, n = chunks();
  LayerSlot& slot = slots_[source.id];
  auto amax = [&](const Chunk& c) { portable_amax(source, c); };
  auto block_topk = [&](const Chunk& c) {
    launch_block_topk(keys_.get(), ld_keys_, sel_len_.get() + c.first, c.count, max_len_,
                      blocks_.get() + int64_t(c.first) * kTopkBlocks, level_kth(batch, c.first), pick_keys());
  };
  auto own = [&](const Chunk& c) {
    launch_own_topk(dense_.get(), ld_dense_, sel_len_.get() + c.first, c.count, k, level_kth_.get() + c.first,
                    blocks_.get() + int64_t(c.first) * kTopkBlocks, valid_len_.get() + c.first,
                    slot.picks.get() + int64_t(c.first) * k, topk_list_.get() + c.first, pick_keys());
  };
  auto run = [&](const Chunk& c) {
    launch_dense(source, c, true, true, true);
    amax(c);
    block_topk(c);
    own(c);
  };
  poison(blocks_.get(), kPoisonByteInt, size_t(nsel + ntail) * kTopkBlocks * sizeof(int32_t));
  poison(slot.picks.get(), kPoisonByteInt, size_t(nsel) * k * sizeof(int32_t));
  for (int i = 0; i < n; ++i) {
    const Chunk c = chunk(i);
    poison(dense_.get(), kPoisonByteFloat, size_t(c.count) * size_t(ld_dense_) * sizeof(float));
    poison(keys_.get(), kPoisonByteFloat, size_t(c.count) * size_t(ld_keys_) * sizeof(float));
    launch_dense(source, c, true, true, true);
    if (checks_ && !skip_stores_)  // else check_keys checks the stored blocks
      check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(dense_.get()), ld_dense_, c.count,
                                     sel_len_.get() + c.first, 1, 0, 0xFFFFFFFFu),
                    "dense_logits");
    amax(c);
    if (checks_) check_keys(c);
    block_topk(c);
    own(c);
  }
  if (timing_) time_chunked(source, n, k, amax, block_topk, own, run);
  if (ntail > 0) gather_rows(blocks_.get(), kTopkBlocks, tail_rows_.get(), ntail, blocks_.get() + int64_t(nsel) * kTopkBlocks);
  if (checks_) check_published(slot, k);
  published_ = true;
  own_via_blocks_ = true;
}

// Every published block of both tables and every own pick of the source written.
void GpuEngine::check_published(const LayerSlot& source, int k) {
  const int nsel = int(sel_.size()), ntail = int(tail_sel_.size());
  check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(blocks_.get()), kTopkBlocks, nsel + ntail,
                                 nullptr, 1, kTopkBlocks, 0xA5A5A5A5u),
                "block_topk");
  check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(source.picks.get()), k, nsel, nullptr, 1, k,
                                 0xA5A5A5A5u),
                "topk");
}

// Each kernel of the chunked source timed over every chunk. The timed launches of one kernel
// read the buffers another chunk's kernels left, so the outputs are computed again afterwards.
template <class Amax, class BlockTopk, class Own, class Run>
void GpuEngine::time_chunked(const Layer& source, int n, int k, const Amax& amax, const BlockTopk& block_topk,
                             const Own& own, const Run& run) {
  const int nsel = int(sel_.size());
  int64_t sum_blocks = 0;
  for (int L : sel_len_host_) sum_blocks += (L + 7) / 8;
  auto over = [&](const auto& f) { return [&, f] { for (int i = 0; i < n; ++i) f(chunk(i)); }; };
  time("dense_logits", &source, 2.0 * kHeads * kHeadDim * double(sum_len_),
       double(sum_len_) * 4 + double(ncols_) * 68 + double(nsel) * kHeads * 68,
       over([&](const Chunk& c) { launch_dense(source, c, true, true, true); }));
  const LayerSlot& slot = slots_[source.id];
  if (slot.nwtiles > 0 && slot.ntiles > 0) {
    time("dense_logits.wgmma", &source, 0, 0,
         over([&](const Chunk& c) { launch_dense(source, c, true, false, true); }));
    time("dense_logits.mma_sync", &source, 0, 0,
         over([&](const Chunk& c) { launch_dense(source, c, false, true, true); }));
  }
  time("block_amax", &source, 0, amax_bytes(source, sum_blocks), over(amax));
  time("block_topk", &source, 0, double(sum_blocks) * 4 + double(nsel) * kTopkBlocks * 4, over(block_topk));
  time("topk", &source, 0, double(sum_valid_) * 4 + double(nsel) * k * 4, over(own));
  for (int i = 0; i < n; ++i) run(chunk(i));
}

void GpuEngine::select(const Batch& batch, const Layer& consumer, const RunOptions& options, Results& out) {
  if (!published_) throw std::runtime_error(name() + ": consumer layer before the source published");
  prep_query(consumer, path_ == PathKind::mask);
  if (path_ == PathKind::sparse)
    select_sparse(batch, consumer, options, out);
  else
    select_mask(batch, consumer, options, out);
}

// The table rows ordered split-route rows first, each group in table order; n_split of them take
// the split route. Built from the layer's row_split, read back in a plain run (the plan).
void GpuEngine::upload_route_order(LayerSlot& slot) {
  slot.plan_split = slot.row_split.to_host(sel_.size());
  const std::vector<int32_t>& rows = table_rows_host_;
  const std::vector<int32_t>& row_split = slot.plan_split;
  std::vector<int32_t> order;
  order.reserve(rows.size());
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < rows.size(); ++i)
      if (takes_split(row_split[size_t(rows[i])]) == (pass == 0)) order.push_back(int32_t(i));
  slot.n_split = 0;
  for (int32_t r : rows) slot.n_split += takes_split(row_split[size_t(r)]) ? 1 : 0;
  slot.route_order.upload(order.empty() ? std::vector<int32_t>{0} : order);
}

void GpuEngine::select_sparse(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
  const int nsel = int(sel_.size()), k = batch.topk, n = nsel + int(tail_sel_.size());
  LayerSlot& slot = slots_[layer.id];
  if (!capturing_) upload_route_order(slot);
  sparse_rows_ += n;
  sparse_wgmma_rows_ += use_sparse_wgmma_ ? slot.n_split : 0;
  SparseLogitsArgs a{pool_.get(), page_size_, table_.get(), table_width_, qs_.get(), qr_.get(),
                     qexp_.get(), qscale_.get(), row_fast_.get(), qsplit_.get(), qmul_.get(), qdouble_.get(),
                     slot.row_split.get(), slot.weights.get(), sel_len_.get(),
                     sel_req_.get(), req_blk_.get(), kbfrag_.get(), kdfrag_.get(), kbscale_.get(), table_rows_.get(),
                     blocks_.get(), valid_len_.get(), n, slot.route_order.get(), slot.n_split, use_sparse_wgmma_ ? 1 : 0,
                     sparse_.get()};
  poison(sparse_.get(), kPoisonByteFloat, size_t(n) * kCandidateWidth * sizeof(uint16_t));
  launch_sparse_logits(a);
  if (checks_)
    check_written(count_poison_u16(sparse_.get(), kCandidateWidth, n, valid_len_.get(), 1, 0, 0xFFFFu),
                  "sparse_logits");
  poison(slot.picks.get(), kPoisonByteInt, size_t(n) * k * sizeof(int32_t));
  launch_small_topk(sparse_.get(), blocks_.get(), valid_len_.get(), n, k, slot.picks.get());
  if (checks_)
    check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(slot.picks.get()), k, n, nullptr, 1, k,
                                   0xA5A5A5A5u),
                  "small_topk");
  // Timed as the step runs them: over both tables (the tail table adds its rows' work).
  time("sparse_logits", &layer, 2.0 * kHeads * kHeadDim * double(sum_valid_table_),
       double(sum_valid_table_) * (68 + 2) + double(n) * kHeads * 68, [&] { launch_sparse_logits(a); });
  time("small_topk", &layer, 0, double(sum_valid_table_) * 2 + double(n) * k * 4,
       [&] { launch_small_topk(sparse_.get(), blocks_.get(), valid_len_.get(), n, k, slot.picks.get()); });
  if (options.scores) {
    LayerResult& lr = out.layers[layer.id];
    lr.sparse_scores.assign(size_t(batch.rows()), {});
    for (int i = 0; i < nsel; ++i) {
      std::vector<uint16_t>& row = lr.sparse_scores[size_t(sel_[size_t(i)])];
      row.resize(size_t(valid_len_host_[size_t(i)]));
      sparse_.download(row.data(), row.size(), size_t(i) * kCandidateWidth);
    }
  }
}

void GpuEngine::select_mask(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
  const int nsel = int(sel_.size()), k = batch.topk, n = nsel + int(tail_sel_.size());
  DeviceBuffer<int32_t>& picks = slots_[layer.id].picks;
  dense_logits(layer);
  // Both tables in one launch: table row i ranks dense row table_rows[i].
  auto launch = [&] {
    launch_topk_mask(dense_.get(), ld_dense_, table_rows_.get(), blocks_.get(), valid_len_.get(), n, k, picks.get());
  };
  poison(picks.get(), kPoisonByteInt, size_t(n) * k * sizeof(int32_t));
  launch();
  if (checks_)
    check_written(count_poison_u32(reinterpret_cast<const uint32_t*>(picks.get()), k, n, nullptr, 1, k, 0xA5A5A5A5u),
                  "mask_topk");
  time("mask_topk", &layer, 0, double(sum_valid_table_) * 4 + double(n) * k * 4, launch);
  if (options.scores) copy_dense_scores(batch, layer, out);
}

void GpuEngine::plain(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
  prep_query(layer, true);
  dense_logits(layer);
  own_topk(batch, layer);
  if (options.scores) copy_dense_scores(batch, layer, out);
}

// The step's outputs to the host, at its end: published blocks, each layer's picks on the full
// table and (consumers) on the tail table.
void GpuEngine::collect(const Batch& batch, Results& out) {
  const int nsel = int(sel_.size()), k = batch.topk;
  if (published_) {
    out.blocks.assign(size_t(batch.rows()) * kTopkBlocks, kBlockPad);
    store_positions(blocks_, 0, sel_, kTopkBlocks, out.blocks);
  }
  for (const Layer& layer : batch.layers) {
    if (layer.role == Role::consumer && !published_) continue;
    LayerResult& lr = out.layers[layer.id];
    const DeviceBuffer<int32_t>& picks = slots_[layer.id].picks;
    lr.positions.assign(size_t(batch.rows()) * k, kPositionPad);
    store_positions(picks, 0, sel_, k, lr.positions);
    if (layer.role == Role::consumer && !batch.tail_rows.empty()) {
      lr.tail_positions.assign(size_t(batch.total_tail_rows) * k, kPositionPad);
      store_positions(picks, size_t(nsel), tail_index_, k, lr.tail_positions);
    }
  }
}

void GpuEngine::end(const Batch& batch, const RunOptions&, Results& out) {
  if (capturing_) {
    cudaGraph_t graph = nullptr;
    DSA_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    const cudaError_t err = cudaGraphInstantiate(&graph_, graph, 0);
    cudaGraphDestroy(graph);
    DSA_CUDA_CHECK(err);
    return;
  }
  DSA_CUDA_CHECK(cudaStreamSynchronize(stream_));
  collect(batch, out);
  std::string topk_notes;
  if (own_via_blocks_) {
    // The list's entries count from each launch's first row (one launch per chunk when chunked).
    const std::vector<int32_t> list = topk_list_.to_host(sel_.size());
    const int span = chunked_ ? chunk_rows_ : int(list.size());
    int full = 0;
    for (size_t first = 0; first < list.size(); first += size_t(span))
      full += own_topk_full_rows(std::vector<int32_t>(list.begin() + int64_t(first),
                                                      list.begin() + int64_t(std::min(list.size(), first + span))));
    topk_notes = "own top-k: " + std::to_string(full) + " of " + std::to_string(sel_.size()) +
                 " rows needed the full-row pass; ";
  }
  planned_ = true;
  out.peak_device_bytes = DeviceMemoryMeter::peak();
  const std::string sparse_notes =
      path_ == PathKind::sparse ? "sparse: " + std::to_string(sparse_wgmma_rows_) + " of " + std::to_string(sparse_rows_) +
                                      " table rows on wgmma m64n32k32, the rest on mma.sync m16n8k32"
                                : "sparse: none";
  sparse_rows_ = sparse_wgmma_rows_ = 0;
  // Known where the checks ran (check_keys reads the final bounds).
  const std::string skip_notes = skip_stores_ && skip_blocks_ > 0
                                     ? "dense scores left unstored below the rows' bounds: up to " +
                                           std::to_string(skip_below_) + " of " + std::to_string(skip_blocks_) +
                                           " source blocks; "
                                     : "";
  skip_below_ = skip_blocks_ = 0;
  out.notes = "exact int8 tensor-core head scores (" + dense_notes_ + sparse_notes + "); " + topk_notes + skip_notes +
              describe_device();
  timer_.reset();
  if (keep_workspace_) return;
  // Free the large buffers now: the next implementation may need the memory.
  drop_graph();
  shape_.clear();
  planned_ = false;
  dense_ = DeviceBuffer<float>();
  keys_ = DeviceBuffer<float>();
  sparse_ = DeviceBuffer<uint16_t>();
}

// After a replay: every row the plan put on the split or wgmma route must still be admitted to
// it (the other routes take any row, so a row newly admitted only runs slower).
void GpuEngine::check_plan(const Batch& batch) {
  const size_t nsel = sel_.size();
  for (const Layer& layer : batch.layers) {
    LayerSlot& slot = slots_[layer.id];
    for (auto [plan, now, route] : {std::make_tuple(&slot.plan_split, &slot.row_split, "split"),
                                    std::make_tuple(&slot.plan_wgmma, &slot.row_wgmma, "wgmma")}) {
      if (plan->empty()) continue;
      const std::vector<int32_t> admitted = now->to_host(nsel);
      // A wgmma row tile runs one k-step order (row_wgmma's plan class, build_dense_tiles).
      const bool ordered = std::string(route) == "wgmma";
      auto order = [ordered](int32_t v) { return ordered ? class_order(v - 1) : 0; };
      for (size_t i = 0; i < nsel; ++i)
        if ((*plan)[i] != 0 && (admitted[i] == 0 || order(admitted[i]) != order((*plan)[i])))
          throw std::runtime_error(name() + ": replay: layer " + std::to_string(layer.id) + ", row " +
                                   std::to_string(sel_[i]) + " is no longer admitted to the " + route +
                                   " route, in the k-step order, the captured plan puts it on (its outputs would be wrong): run the "
                                   "batch plainly and capture again");
    }
  }
}

Results GpuEngine::capture(const Batch& batch, const RunOptions& options) {
  if (options.timing || options.scores)
    throw std::invalid_argument(name() + ": a captured step records no timings and no scores");
  const std::vector<int32_t> sel = selected_rows(batch, options);
  if (!planned_ || shape_of(batch, sel) != shape_)
    throw std::logic_error(name() + ": capture needs a plain run of a batch of this shape first (with keep_workspace)");
  drop_graph();
  const bool checks = checks_;
  checks_ = false;  // each check synchronises: a graph holds the kernels alone
  capturing_ = true;
  try {
    Results out = run(batch, options);
    capturing_ = false;
    checks_ = checks;
    out.notes = "captured step (CUDA graph); no outputs";
    return out;
  } catch (...) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t graph = nullptr;
      if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    }
    cudaGetLastError();
    capturing_ = false;
    checks_ = checks;
    throw;
  }
}

std::vector<StepRecord> GpuEngine::captured_steps(const Batch& batch, const RunOptions& options) {
  set_keep_workspace(true);
  RunOptions plain = options;
  plain.timing = plain.scores = false;
  run(batch, plain);
  return capture(batch, plain).steps;
}

Results GpuEngine::replay(const Batch& batch, const RunOptions& options) {
  if (!graph_) throw std::logic_error(name() + ": replay before capture");
  const std::vector<int32_t> sel = selected_rows(batch, options);
  if (shape_of(batch, sel) != shape_) throw std::invalid_argument(name() + ": replay of a batch of another shape");
  Results out;
  out.name = out.implementation = name();
  out.device = device();
  out.rows_done.assign(size_t(batch.rows()), options.rows.empty() ? 1 : 0);
  for (int r : options.rows) out.rows_done[size_t(r)] = 1;
  const auto start = std::chrono::steady_clock::now();
  upload_inputs(batch);
  DSA_CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
  DSA_CUDA_CHECK(cudaStreamSynchronize(stream_));
  check_plan(batch);
  collect(batch, out);
  const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - start;
  out.steps.push_back({"graph", wall.count(), 1});
  out.peak_device_bytes = DeviceMemoryMeter::peak();
  out.notes = "replayed CUDA graph; " + describe_device();
  return out;
}

}  // namespace dsa::gpu
