#include "harness/replay/cases.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <sstream>

#include "core/errors.hpp"
#include "core/rules.hpp"
#include "harness/replay/case_id.hpp"
#include "harness/impls/reference_views.hpp"
#include "reference/scores.hpp"

namespace dsa {

// ---- cases ----

std::vector<CaseResult> cases_from_comparisons(const CaseContext& ctx, const std::vector<Comparison>& comparisons) {
  std::map<std::string, CaseResult> by_layer;
  std::vector<std::string> order;
  for (const Comparison& cmp : comparisons)
    for (const LayerComparison& part : cmp.layers) {
      const std::string layer = part.layer.substr(0, part.layer.find('/'));
      auto [it, fresh] = by_layer.try_emplace(layer);
      CaseResult& c = it->second;
      if (fresh) {
        order.push_back(layer);
        c.batch_id = ctx.batch_id;
        c.impl = ctx.impl;
        c.layer = layer;
        c.rows = rows_text(ctx.rows);
        c.input = ctx.input;
        c.id = format_case_id({ctx.batch_id, ctx.impl, layer, ""});
        c.rerun = rerun_command(ctx.input, c.id, ctx.rows_flags, ctx.tolerance);
      }
      if (c.role.empty() || part.layer == layer) c.role = part.role;
      auto same = [&](const CaseComparison& x) { return x.rule == cmp.rule && x.against == cmp.against; };
      auto found = std::find_if(c.comparisons.begin(), c.comparisons.end(), same);
      if (found == c.comparisons.end()) found = c.comparisons.insert(c.comparisons.end(), {cmp.rule, cmp.against, {}});
      found->parts.push_back(part);
    }
  std::vector<CaseResult> out;
  for (const std::string& layer : order) {
    CaseResult& c = by_layer[layer];
    c.verdict = case_verdict(c.comparisons, &c.failed_metric, &c.message);
    out.push_back(std::move(c));
  }
  return out;
}

void mark_nondeterministic(std::vector<CaseResult>& cases) {
  for (CaseResult& c : cases) {
    c.verdict = Disposition::incorrect;
    c.failed_metric = "determinism: repeated runs are not bitwise identical";
    if (c.message.empty()) c.message = "rerun with --repeat 2 to reproduce";
  }
}

bool same_results(const Results& a, const Results& b) {
  if (a.rows_done != b.rows_done || a.blocks != b.blocks || a.layers.size() != b.layers.size()) return false;
  for (const auto& [id, la] : a.layers) {
    auto it = b.layers.find(id);
    if (it == b.layers.end()) return false;
    const LayerResult& lb = it->second;
    if (la.positions != lb.positions || la.tail_positions != lb.tail_positions ||
        la.sparse_scores != lb.sparse_scores || la.dense_scores.size() != lb.dense_scores.size())
      return false;
    // Bitwise, so NaN payloads and -0 count as they are stored.
    for (size_t r = 0; r < la.dense_scores.size(); ++r) {
      const auto& x = la.dense_scores[r];
      const auto& y = lb.dense_scores[r];
      if (x.size() != y.size() || (!x.empty() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) != 0))
        return false;
    }
  }
  return true;
}

// ---- worst rows ----

namespace {

// The reference's fp32 dense scores of every position of a row; empty when they cannot be had.
std::vector<float> row_scores(const Batch& batch, const Layer& layer, int row) {
  const int64_t L = batch.compress_len[size_t(row)];
  std::vector<float> out(size_t(std::max<int64_t>(L, 0)));
  try {
    ref::dense_scores_row(query_of(layer, row), keys_of(batch, row), L, out.data());
  } catch (const std::exception&) {
    out.clear();  // an overflowing row: the comparison already reports it
  }
  return out;
}

ScoredPosition scored(int position, const std::vector<float>& scores, double kth) {
  const double s = position >= 0 && size_t(position) < scores.size() ? scores[size_t(position)] : 0.0;
  return {position, s, kth != 0 ? (s - kth) / std::fabs(kth) : s - kth};
}

WorstRow worst_row(const RowFigure& f, const Batch& batch, const Layer* layer) {
  WorstRow w;
  w.row = f.row;
  w.length = f.length;
  w.agreement = f.agreement;
  w.floor_margin = std::isfinite(f.floor_margin) ? f.floor_margin : 0;
  std::vector<float> scores;
  if (layer && f.row >= 0 && f.row < batch.rows()) scores = row_scores(batch, *layer, f.row);
  if (!scores.empty()) {
    // Reference order: larger score first, then smaller position. Only ranks up to k + 2 are
    // shown, so those are placed and sorted, not the whole row (262144 positions on chunk-256k).
    const auto before = [&](int a, int b) {
      const float sa = scores[size_t(a)], sb = scores[size_t(b)];
      return sa > sb || (!(sb > sa) && a < b);
    };
    std::vector<int> rank(scores.size());
    std::iota(rank.begin(), rank.end(), 0);
    const int k = std::min<int>(batch.topk, int(scores.size()));
    const int nshown = std::min<int>(int(rank.size()), k + 3);
    std::nth_element(rank.begin(), rank.begin() + (nshown - 1), rank.end(), before);
    std::sort(rank.begin(), rank.begin() + nshown, before);
    w.kth_score = scores[size_t(rank[size_t(k - 1)])];
    for (int i = std::max(0, k - 4); i < nshown; ++i)
      w.around_kth.push_back(scored(rank[size_t(i)], scores, w.kth_score));
  }
  for (int p : f.missed) w.missed.push_back(scored(p, scores, w.kth_score));
  for (int p : f.extra) w.extra.push_back(scored(p, scores, w.kth_score));
  return w;
}

}  // namespace

void add_worst_rows(CaseResult& c, const Batch& batch, size_t count) {
  std::vector<const RowFigure*> rows;
  for (const CaseComparison& cmp : c.comparisons) {
    if (cmp.rule == Rule::quality) continue;  // fp64 misses are expected; the drill-down is about bugs
    for (const LayerComparison& part : cmp.parts)
      for (const RowFigure& f : part.rows)
        if (f.agreement < 1 || !f.exact || f.floor_margin < 0) rows.push_back(&f);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const RowFigure* a, const RowFigure* b) {
    if (a->agreement != b->agreement) return a->agreement < b->agreement;
    return a->floor_margin < b->floor_margin;
  });
  std::vector<int> seen;
  char* end = nullptr;
  const long id = std::strtol(c.layer.c_str(), &end, 10);
  const Layer* layer = end != c.layer.c_str() && *end == '\0' ? batch.layer(int(id)) : nullptr;
  for (const RowFigure* f : rows) {
    if (c.worst.size() >= count) break;
    if (std::find(seen.begin(), seen.end(), f->row) != seen.end()) continue;
    seen.push_back(f->row);
    c.worst.push_back(worst_row(*f, batch, layer));
  }
}

}  // namespace dsa
