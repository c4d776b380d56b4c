#include "gpu/engine/engine.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "gpu/block_amax/block_amax.cuh"
#include "gpu/common/check.cuh"
#include "gpu/common/poison.cuh"
#include "gpu/dense_logits/dense_logits.cuh"
#include "gpu/dense_logits/dense_wgmma.cuh"
#include "gpu/gpu_implementations.hpp"
#include "gpu/prep/prep.cuh"
#include "gpu/small_topk/small_topk.cuh"
#include "gpu/sparse_logits/sparse_logits.cuh"
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
  for (int first = 0; first < n; first += 65535) {
    const int m = std::min(65535, n - first);
    gather_rows_kernel<<<dim3((width + 255) / 256, m), 256>>>(src, width, rows + first, m,
                                                             dst + int64_t(first) * width);
    DSA_LAUNCH_CHECK("gather_rows_kernel");
  }
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

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

void GpuEngine::time(const std::string& kernel, const Layer* layer, double flops, double bytes,
                     const std::function<void()>& launch) {
  if (!timing_) return;
  timings_->push_back(timer_->measure(kernel_name(kernel), layer ? std::to_string(layer->id) : "all", flops,
                                      bytes, launch));
}

void GpuEngine::begin(const Batch& batch, const RunOptions& options, Results& out) {
  const std::string why = unsupported_reason();
  if (!why.empty()) throw std::runtime_error(name() + ": " + why);
  DeviceMemoryMeter::reset_peak();
  timing_ = options.timing;
  timings_ = &out.timings;
  if (timing_) timer_ = std::make_unique<KernelTimer>(options.timing_samples);
  published_ = false;
  topk_notes_.clear();

  sel_.clear();
  if (options.rows.empty()) {
    for (int r = 0; r < batch.rows(); ++r) sel_.push_back(r);
  } else {
    sel_ = options.rows;
  }
  const int nsel = int(sel_.size());
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
  ld_dense_ = round_up(std::max(max_len_, 1), 8);
  ld_keys_ = round_up(std::max((max_len_ + 7) / 8, 1), 4);
  sel_rows_.upload(sel_);
  sel_len_.upload(len);
  sel_req_.upload(req);
  sel_kcol_.upload(kcol);
  std::vector<int32_t> ident(size_t(std::max(nsel, 1)));
  for (int i = 0; i < nsel; ++i) ident[size_t(i)] = i;
  identity_.upload(ident);

  sel_req_host_ = req;
  use_wgmma_ = dense_wgmma_supported() && std::getenv("DSA_DENSE_PORTABLE") == nullptr;
  // Tail rows among the selected rows.
  tail_sel_.clear();
  tail_index_.clear();
  for (int i = 0; i < nsel; ++i) {
    const int64_t t = batch.tail_rows.empty() ? -1 : batch.tail_index(sel_[size_t(i)]);
    if (t >= 0) {
      tail_sel_.push_back(i);
      tail_index_.push_back(int32_t(t));
    }
  }
  if (!tail_sel_.empty()) tail_rows_.upload(tail_sel_);
  upload_keys(batch);
}

void GpuEngine::upload_keys(const Batch& batch) {
  pool_.upload(batch.pool);
  table_.upload(batch.page_table);
  std::vector<int64_t> start(batch.request_start.begin(), batch.request_start.end());
  ncols_ = 0;
  int max_lc = 0;
  for (int b = 0; b < batch.requests(); ++b) {
    ncols_ = std::max<int64_t>(ncols_, batch.request_start[size_t(b)] + batch.compressed_len[size_t(b)]);
    max_lc = std::max(max_lc, batch.compressed_len[size_t(b)]);
  }
  // 8 spare columns: a partial last tile may read (and discard) past the last request.
  const size_t cols = size_t(ncols_ + 8);
  ks_.resize(cols * 128);
  kr_.resize(cols * 128);
  kexp_.resize(cols);
  kscale_.resize(cols);
  ks_.fill_bytes(0, cols * 128);
  kr_.fill_bytes(0, cols * 128);
  kexp_.fill_bytes(0x80, cols);
  kscale_.fill_bytes(0, cols);
  DeviceBuffer<int32_t> lc;
  lc.upload(batch.compressed_len);
  DeviceBuffer<int64_t> dstart;
  dstart.upload(start);
  KeyPrepArgs a{pool_.get(), batch.page_size, table_.get(), batch.table_width, lc.get(), dstart.get(),
                batch.requests(), max_lc, ks_.get(), kr_.get(), kexp_.get(), kscale_.get()};
  launch_key_prep(a);
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  time("key_prep", nullptr, 0, double(ncols_) * (68 + 2 * 128 + 8), [&] { launch_key_prep(a); });
  // The exponent ranges serve the wgmma route's admission alone (query prep reads them only with
  // the wgmma form): no read-back of every key scale where that route does not run.
  if (use_wgmma_) upload_key_exponents(batch);
  if (path_ == PathKind::sparse) {
    kfrag_.resize(cols * 128);
    launch_sparse_key_frags(ks_.get(), int64_t(cols), kfrag_.get());
    DSA_CUDA_CHECK(cudaDeviceSynchronize());
    time("key_frags", nullptr, 0, double(cols) * 256, [&] { launch_sparse_key_frags(ks_.get(), int64_t(cols), kfrag_.get()); });
  }
}

// Per request, the lowest and highest minimum group exponent of its folded keys (the wgmma
// route's admission, gpu/prep): read from the key scales 2^(fmin - 128).
void GpuEngine::upload_key_exponents(const Batch& batch) {
  const std::vector<float> ks = kscale_.to_host(size_t(ncols_));
  std::vector<int2> range(size_t(std::max(batch.requests(), 1)), int2{127, 127});
  for (int b = 0; b < batch.requests(); ++b) {
    int lo = 1 << 20, hi = -(1 << 20);
    for (int64_t j = 0; j < batch.compressed_len[size_t(b)]; ++j) {
      const float v = ks[size_t(batch.request_start[size_t(b)] + j)];
      if (v == 0.0f) continue;
      int bits;
      std::memcpy(&bits, &v, 4);
      const int fmin = ((bits >> 23) & 0xFF) + 1;
      lo = std::min(lo, fmin);
      hi = std::max(hi, fmin);
    }
    if (lo <= hi) range[size_t(b)] = int2{lo, hi};
  }
  req_fexp_.upload(range);
}

// Row tiles of the dense kernels: the rows the query prep admitted to the wgmma route in tiles of
// up to 4 of one request, the others in tiles of up to 8 of one request (the portable kernel).
void GpuEngine::build_dense_tiles() {
  const int nsel = int(sel_.size());
  std::vector<int32_t> wrows, rest, first, count;
  auto close_wtile = [&] { while (wrows.size() % kWgmmaTileRows != 0) wrows.push_back(-1); };
  int wreq = -1, wfill = 0;
  for (int i = 0; i < nsel; ++i) {
    const int req = sel_req_host_[size_t(i)];
    if (use_wgmma_ && row_wgmma_host_[size_t(i)] != 0) {
      if (req != wreq || wfill == kWgmmaTileRows) {
        close_wtile();
        wreq = req;
        wfill = 0;
      }
      wrows.push_back(i);
      ++wfill;
    } else {
      if (rest.empty() || sel_req_host_[size_t(rest.back())] != req || count.back() == kDenseTileRows) {
        first.push_back(int32_t(rest.size()));
        count.push_back(0);
      }
      rest.push_back(i);
      ++count.back();
    }
  }
  close_wtile();
  nwtiles_ = int(wrows.size()) / kWgmmaTileRows;
  const int nw = nsel - int(rest.size());
  dense_notes_ = "dense: " + std::to_string(nw) + " of " + std::to_string(nsel) + " rows on wgmma m64n128k32, " +
                 std::to_string(rest.size()) + " on mma.sync; ";
  ntiles_ = int(first.size());
  if (ntiles_ > 65535 || nwtiles_ > 65535) throw std::runtime_error(name() + ": too many row tiles for one launch");
  wtile_rows_.upload(wrows.empty() ? std::vector<int32_t>{-1} : wrows);
  tile_rows_.upload(rest.empty() ? std::vector<int32_t>{0} : rest);
  tile_first_.upload(first.empty() ? std::vector<int32_t>{0} : first);
  tile_count_.upload(count.empty() ? std::vector<int32_t>{0} : count);
}

void GpuEngine::prep_query(const Layer& layer, bool dense) {
  const int nsel = int(sel_.size());
  q_.upload(layer.q);
  q_scale_.upload(layer.q_scale);
  std::vector<float> w(size_t(nsel) * kHeads);
  for (int i = 0; i < nsel; ++i)
    std::copy_n(layer.weight_row(sel_[size_t(i)]), kHeads, w.begin() + int64_t(i) * kHeads);
  weights_.upload(w);
  qs_.resize(size_t(std::max(nsel, 1)) * 4096);
  qr_.resize(size_t(std::max(nsel, 1)) * 4096);
  qexp_.resize(size_t(std::max(nsel, 1)) * 32);
  qscale_.resize(size_t(std::max(nsel, 1)) * 32);
  row_fast_.resize(size_t(std::max(nsel, 1)));
  qsplit_.resize(size_t(std::max(nsel, 1)) * 4096);
  qmul_.resize(size_t(std::max(nsel, 1)) * 32);
  row_split_.resize(size_t(std::max(nsel, 1)));
  const size_t n1 = size_t(std::max(nsel, 1));
  const bool wgmma = use_wgmma_ && dense;  // the wgmma form serves the dense kernel alone
  if (wgmma) {
    qw_.resize(n1 * 4096);
    qw_mul_.resize(n1 * 32);
    qw_weight_.resize(n1 * 32);
    qw_shift_.resize(n1);
  }
  row_wgmma_.resize(n1);  // written for every row when the wgmma form is (wgmma_row), read only then
  QueryPrepArgs a{q_.get(),        q_scale_.get(), sel_rows_.get(), nsel,          qs_.get(),
                  qr_.get(),       qexp_.get(),    qscale_.get(),   row_fast_.get(), qsplit_.get(),
                  qmul_.get(),     row_split_.get(), weights_.get(), sel_req_.get(), req_fexp_.get(),
                  wgmma ? qw_.get() : nullptr, qw_mul_.get(), qw_weight_.get(), qw_shift_.get(),
                  row_wgmma_.get()};
  launch_query_prep(a);
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  // Only the dense kernels use the row tiles; a sparse consumer reads row_split back itself
  // (upload_route_order), so its query prep costs no round trip here.
  if (dense) {
    if (wgmma) row_wgmma_host_ = row_wgmma_.to_host(size_t(nsel));
    build_dense_tiles();
  }
  time("query_prep", &layer, 0, double(nsel) * 32 * (68 + 3 * 128 + 16), [&] { launch_query_prep(a); });
}

void GpuEngine::dense_logits(const Layer& layer) {
  const int nsel = int(sel_.size());
  dense_.resize(size_t(std::max(nsel, 1)) * size_t(ld_dense_));
  DenseLogitsArgs a{qs_.get(), qr_.get(), qexp_.get(), qscale_.get(), row_fast_.get(), qsplit_.get(),
                    qmul_.get(), row_split_.get(), weights_.get(),
                    ks_.get(), kr_.get(), kexp_.get(), kscale_.get(), tile_rows_.get(), tile_first_.get(),
                    tile_count_.get(), ntiles_, sel_len_.get(), sel_kcol_.get(), max_len_, dense_.get(), ld_dense_};
  DenseWgmmaArgs w{qw_.get(), qw_mul_.get(), qw_weight_.get(), qw_shift_.get(), wtile_rows_.get(), nwtiles_,
                   qr_.get(), qexp_.get(), qscale_.get(), weights_.get(), ks_.get(), kr_.get(), kexp_.get(),
                   kscale_.get(), sel_len_.get(), sel_kcol_.get(), max_len_, dense_.get(), ld_dense_};
  auto launch = [&] {
    launch_dense_wgmma(w);
    launch_dense_logits(a);
  };
  dense_.fill_bytes(kPoisonByteFloat, size_t(nsel) * size_t(ld_dense_));
  launch();
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  require_written(count_poison_u32(reinterpret_cast<const uint32_t*>(dense_.get()), ld_dense_, nsel,
                                   sel_len_.get(), 1, 0, 0xFFFFFFFFu),
                  kernel_name("dense_logits"));
  time("dense_logits", &layer, 2.0 * kHeads * kHeadDim * double(sum_len_),
       double(sum_len_) * 4 + double(ncols_) * 68 + double(nsel) * kHeads * 68, launch);
  if (nwtiles_ > 0 && ntiles_ > 0) {  // both routes ran: each one's share
    time("dense_logits.wgmma", &layer, 0, 0, [&] { launch_dense_wgmma(w); });
    time("dense_logits.mma_sync", &layer, 0, 0, [&] { launch_dense_logits(a); });
  }
}

void GpuEngine::store_positions(const DeviceBuffer<int32_t>& picks, const std::vector<int32_t>& rows_out, int k,
                                std::vector<int32_t>& dst) {
  const std::vector<int32_t> host = picks.to_host(rows_out.size() * size_t(k));
  for (size_t i = 0; i < rows_out.size(); ++i)
    std::copy_n(host.begin() + int64_t(i) * k, k, dst.begin() + int64_t(rows_out[i]) * k);
}

void GpuEngine::own_topk(const Batch& batch, const Layer& layer, Results& out) {
  const int nsel = int(sel_.size()), k = batch.topk;
  // On the source, level one is published first and narrows the search (launch_own_topk);
  // plain layers have no level one and scan whole rows.
  const bool via_blocks = published_ && layer.role == Role::source;
  picks_.resize(size_t(std::max(nsel, 1)) * k);
  topk_scratch_.resize(size_t(nsel) + 1);
  auto launch = [&] {
    if (via_blocks)
      return launch_own_topk(dense_.get(), ld_dense_, sel_len_.get(), nsel, k, keys_.get(), ld_keys_, blocks_.get(),
                             valid_len_.get(), picks_.get(), topk_scratch_.get());
    launch_topk_dense(dense_.get(), ld_dense_, sel_len_.get(), nsel, k, picks_.get());
    return 0;
  };
  picks_.fill_bytes(kPoisonByteInt, size_t(nsel) * k);
  const int full_rows = launch();
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  require_written(count_poison_u32(reinterpret_cast<const uint32_t*>(picks_.get()), k, nsel, nullptr, 1, k,
                                   0xA5A5A5A5u),
                  kernel_name("topk"));
  if (via_blocks) topk_notes_ = "own top-k: " + std::to_string(full_rows) + " of " + std::to_string(nsel) +
                                " rows needed the full-row pass; ";
  time("topk", &layer, 0, double(via_blocks ? sum_valid_ : sum_len_) * 4 + double(nsel) * k * 4, [&] { launch(); });
  LayerResult& lr = out.layers[layer.id];
  lr.positions.assign(size_t(batch.rows()) * k, kPositionPad);
  store_positions(picks_, sel_, k, lr.positions);
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
  const int nsel = int(sel_.size());
  prep_query(source, true);
  dense_logits(source);
  if (options.scores) copy_dense_scores(batch, source, out);

  // Level one: block keys, top-2048 with the ascending write (the block sort) and valid_len.
  int64_t sum_blocks = 0;
  for (int L : sel_len_host_) sum_blocks += (L + 7) / 8;
  keys_.resize(size_t(std::max(nsel, 1)) * size_t(ld_keys_));
  keys_.fill_bytes(kPoisonByteFloat, size_t(nsel) * size_t(ld_keys_));
  if (nsel > 65535) throw std::runtime_error(name() + ": more than 65535 rows in one run");
  launch_block_amax(dense_.get(), ld_dense_, sel_len_.get(), nsel, max_len_, keys_.get(), ld_keys_);
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  require_written(count_poison_u32(reinterpret_cast<const uint32_t*>(keys_.get()), ld_keys_, nsel, sel_len_.get(),
                                   8, 0, 0xFFFFFFFFu),
                  kernel_name("block_amax"));
  time("block_amax", &source, 0, double(sum_len_) * 4 + double(sum_blocks) * 4,
       [&] { launch_block_amax(dense_.get(), ld_dense_, sel_len_.get(), nsel, max_len_, keys_.get(), ld_keys_); });

  blocks_.resize(size_t(std::max(nsel, 1)) * kTopkBlocks);
  valid_len_.resize(size_t(std::max(nsel, 1)));
  blocks_.fill_bytes(kPoisonByteInt, size_t(nsel) * kTopkBlocks);
  valid_len_.fill_bytes(kPoisonByteInt, size_t(nsel));
  launch_block_topk(keys_.get(), ld_keys_, sel_len_.get(), nsel, max_len_, blocks_.get(), valid_len_.get());
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  require_written(count_poison_u32(reinterpret_cast<const uint32_t*>(blocks_.get()), kTopkBlocks, nsel, nullptr, 1,
                                   kTopkBlocks, 0xA5A5A5A5u) +
                      count_poison_u32(reinterpret_cast<const uint32_t*>(valid_len_.get()), 1, nsel, nullptr, 1, 1,
                                       0xA5A5A5A5u),
                  kernel_name("block_topk"));
  time("block_topk", &source, 0, double(sum_blocks) * 4 + double(nsel) * kTopkBlocks * 4,
       [&] { launch_block_topk(keys_.get(), ld_keys_, sel_len_.get(), nsel, max_len_, blocks_.get(), valid_len_.get()); });

  out.blocks.assign(size_t(batch.rows()) * kTopkBlocks, kBlockPad);
  store_positions(blocks_, sel_, kTopkBlocks, out.blocks);
  valid_len_host_ = valid_len_.to_host(size_t(nsel));
  sum_valid_ = 0;
  for (int v : valid_len_host_) sum_valid_ += v;
  published_ = true;
  own_topk(batch, source, out);

  // The tail table: the published rows of the tail rows.
  const int ntail = int(tail_sel_.size());
  if (ntail > 0) {
    tail_blocks_.resize(size_t(ntail) * kTopkBlocks);
    tail_valid_.resize(size_t(ntail));
    gather_rows(blocks_.get(), kTopkBlocks, tail_rows_.get(), ntail, tail_blocks_.get());
    gather_rows(valid_len_.get(), 1, tail_rows_.get(), ntail, tail_valid_.get());
    DSA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  published_ = true;
}

void GpuEngine::select(const Batch& batch, const Layer& consumer, const RunOptions& options, Results& out) {
  if (!published_) throw std::runtime_error(name() + ": consumer layer before the source published");
  prep_query(consumer, path_ == PathKind::mask);
  if (path_ == PathKind::sparse)
    select_sparse(batch, consumer, options, out);
  else
    select_mask(batch, consumer, options, out);
}

// Table rows (rows_host[i]: the selected row of table row i) ordered split-route rows first, each
// group in table order; returns how many take the split route.
int GpuEngine::upload_route_order(const std::vector<int32_t>& rows_host) {
  std::vector<int32_t> order;
  order.reserve(rows_host.size());
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < rows_host.size(); ++i)
      if ((row_split_host_[size_t(rows_host[i])] != 0) == (pass == 0)) order.push_back(int32_t(i));
  int n_split = 0;
  for (int32_t r : rows_host) n_split += row_split_host_[size_t(r)] != 0;
  route_order_.upload(order.empty() ? std::vector<int32_t>{0} : order);
  return n_split;
}

void GpuEngine::select_sparse(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
  const int nsel = int(sel_.size()), k = batch.topk;
  LayerResult& lr = out.layers[layer.id];
  row_split_host_ = row_split_.to_host(size_t(nsel));  // this layer's routes (upload_route_order)
  auto run_table = [&](const int32_t* rows, const std::vector<int32_t>& rows_host, const int32_t* blocks,
                       const int32_t* valid, int n, DeviceBuffer<uint16_t>& scores, DeviceBuffer<int32_t>& picks,
                       bool record) {
    scores.resize(size_t(std::max(n, 1)) * kCandidateWidth);
    picks.resize(size_t(std::max(n, 1)) * k);
    const int n_split = upload_route_order(rows_host);
    SparseLogitsArgs a{pool_.get(), batch.page_size, table_.get(), batch.table_width, qs_.get(), qr_.get(),
                       qexp_.get(), qscale_.get(), row_fast_.get(), qsplit_.get(), qmul_.get(),
                       row_split_.get(), weights_.get(), sel_len_.get(),
                       sel_req_.get(), sel_kcol_.get(), kfrag_.get(), kscale_.get(), rows, blocks, valid, n,
                       route_order_.get(), n_split, scores.get()};
    scores.fill_bytes(kPoisonByteFloat, size_t(n) * kCandidateWidth);
    launch_sparse_logits(a);
    DSA_CUDA_CHECK(cudaDeviceSynchronize());
    require_written(count_poison_u16(scores.get(), kCandidateWidth, n, valid, 1, 0, 0xFFFFu),
                    kernel_name("sparse_logits"));
    picks.fill_bytes(kPoisonByteInt, size_t(n) * k);
    launch_small_topk(scores.get(), blocks, valid, n, k, picks.get());
    DSA_CUDA_CHECK(cudaDeviceSynchronize());
    require_written(count_poison_u32(reinterpret_cast<const uint32_t*>(picks.get()), k, n, nullptr, 1, k,
                                     0xA5A5A5A5u),
                    kernel_name("small_topk"));
    if (record) {
      time("sparse_logits", &layer, 2.0 * kHeads * kHeadDim * double(sum_valid_),
           double(sum_valid_) * (68 + 2) + double(n) * kHeads * 68, [&] { launch_sparse_logits(a); });
      time("small_topk", &layer, 0, double(sum_valid_) * 2 + double(n) * k * 4,
           [&] { launch_small_topk(scores.get(), blocks, valid, n, k, picks.get()); });
    }
  };
  std::vector<int32_t> table_rows(static_cast<size_t>(nsel));
  for (int i = 0; i < nsel; ++i) table_rows[size_t(i)] = i;
  run_table(identity_.get(), table_rows, blocks_.get(), valid_len_.get(), nsel, sparse_, picks_, true);
  lr.positions.assign(size_t(batch.rows()) * k, kPositionPad);
  store_positions(picks_, sel_, k, lr.positions);
  if (options.scores) {
    lr.sparse_scores.assign(size_t(batch.rows()), {});
    for (int i = 0; i < nsel; ++i) {
      std::vector<uint16_t>& row = lr.sparse_scores[size_t(sel_[size_t(i)])];
      row.resize(size_t(valid_len_host_[size_t(i)]));
      sparse_.download(row.data(), row.size(), size_t(i) * kCandidateWidth);
    }
  }
  if (!batch.tail_rows.empty()) {
    lr.tail_positions.assign(size_t(batch.total_tail_rows) * k, kPositionPad);
    const int ntail = int(tail_sel_.size());
    if (ntail > 0) {
      run_table(tail_rows_.get(), tail_sel_, tail_blocks_.get(), tail_valid_.get(), ntail, tail_sparse_, tail_picks_,
                false);
      store_positions(tail_picks_, tail_index_, k, lr.tail_positions);
    }
  }
}

void GpuEngine::select_mask(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
  const int nsel = int(sel_.size()), k = batch.topk;
  dense_logits(layer);
  LayerResult& lr = out.layers[layer.id];
  picks_.resize(size_t(std::max(nsel, 1)) * k);
  picks_.fill_bytes(kPoisonByteInt, size_t(nsel) * k);
  launch_topk_mask(dense_.get(), ld_dense_, nullptr, blocks_.get(), valid_len_.get(), nsel, k, picks_.get());
  DSA_CUDA_CHECK(cudaDeviceSynchronize());
  require_written(count_poison_u32(reinterpret_cast<const uint32_t*>(picks_.get()), k, nsel, nullptr, 1, k,
                                   0xA5A5A5A5u),
                  kernel_name("mask_topk"));
  time("mask_topk", &layer, 0, double(sum_valid_) * 4 + double(nsel) * k * 4, [&] {
    launch_topk_mask(dense_.get(), ld_dense_, nullptr, blocks_.get(), valid_len_.get(), nsel, k, picks_.get());
  });
  lr.positions.assign(size_t(batch.rows()) * k, kPositionPad);
  store_positions(picks_, sel_, k, lr.positions);
  if (options.scores) copy_dense_scores(batch, layer, out);
  if (!batch.tail_rows.empty()) {
    lr.tail_positions.assign(size_t(batch.total_tail_rows) * k, kPositionPad);
    const int ntail = int(tail_sel_.size());
    if (ntail > 0) {
      tail_picks_.resize(size_t(ntail) * k);
      tail_picks_.fill_bytes(kPoisonByteInt, size_t(ntail) * k);
      launch_topk_mask(dense_.get(), ld_dense_, tail_rows_.get(), tail_blocks_.get(), tail_valid_.get(), ntail, k,
                       tail_picks_.get());
      DSA_CUDA_CHECK(cudaDeviceSynchronize());
      require_written(count_poison_u32(reinterpret_cast<const uint32_t*>(tail_picks_.get()), k, ntail, nullptr, 1,
                                       k, 0xA5A5A5A5u),
                      kernel_name("mask_topk(tail)"));
      store_positions(tail_picks_, tail_index_, k, lr.tail_positions);
    }
  }
}

void GpuEngine::plain(const Batch& batch, const Layer& layer, const RunOptions& options, Results& out) {
  prep_query(layer, true);
  dense_logits(layer);
  own_topk(batch, layer, out);
  if (options.scores) copy_dense_scores(batch, layer, out);
}

void GpuEngine::end(const Batch&, const RunOptions&, Results& out) {
  out.peak_device_bytes = DeviceMemoryMeter::peak();
  out.notes = "exact int8 tensor-core head scores (" + dense_notes_ + "sparse: mma.sync m16n8k32); " + topk_notes_ +
              describe_device();
  timer_.reset();
  // Free the large buffers now: the next implementation may need the memory.
  dense_ = DeviceBuffer<float>();
  keys_ = DeviceBuffer<float>();
  sparse_ = DeviceBuffer<uint16_t>();
}

}  // namespace dsa::gpu
