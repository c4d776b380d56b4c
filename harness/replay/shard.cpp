#include "harness/replay/shard.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "core/errors.hpp"

namespace dsa {

namespace {

bool parse_int(const std::string& text, long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || v < 0 || v > (1L << 30)) return false;
  *out = v;
  return true;
}

const char* system_getenv(const char* name) { return std::getenv(name); }

Shard checked(long index, long count, const std::string& option, const std::string& text) {
  if (count < 1) throw InputError(option, text, "the shard count must be at least 1");
  if (index >= count) throw InputError(option, text, "the shard index must be below the shard count");
  return {int(index), int(count)};
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  long index = 0, count = 0;
  if (slash == std::string::npos || !parse_int(text.substr(0, slash), &index) ||
      !parse_int(text.substr(slash + 1), &count))
    throw InputError("--shard", text, "expected I/N with integers 0 <= I < N");
  return checked(index, count, "--shard", text);
}

Shard shard_from_environment(const char* (*getenv_fn)(const char*)) {
  if (!getenv_fn) getenv_fn = system_getenv;
  auto var = [&](const char* name) {
    const char* v = getenv_fn(name);
    return std::string(v ? v : "");
  };
  long id = 0, min = 0, count = 0;
  if (!var("SLURM_ARRAY_TASK_ID").empty()) {
    const std::string text = var("SLURM_ARRAY_TASK_ID") + " - " + var("SLURM_ARRAY_TASK_MIN") + " / " +
                             var("SLURM_ARRAY_TASK_COUNT");
    if (!parse_int(var("SLURM_ARRAY_TASK_ID"), &id) || !parse_int(var("SLURM_ARRAY_TASK_MIN"), &min) ||
        !parse_int(var("SLURM_ARRAY_TASK_COUNT"), &count) || id < min)
      throw InputError("SLURM_ARRAY_TASK_*", text, "expected integer task ID >= task MIN and a task COUNT");
    return checked(id - min, count, "SLURM_ARRAY_TASK_*", text);
  }
  if (!var("JOB_COMPLETION_INDEX").empty()) {
    const std::string text = var("JOB_COMPLETION_INDEX") + " / " + var("DSA_SHARD_COUNT");
    if (!parse_int(var("JOB_COMPLETION_INDEX"), &id) || !parse_int(var("DSA_SHARD_COUNT"), &count))
      throw InputError("JOB_COMPLETION_INDEX/DSA_SHARD_COUNT", text,
                       "an Indexed Job needs DSA_SHARD_COUNT (= the Job's completions) in its environment");
    return checked(id, count, "JOB_COMPLETION_INDEX/DSA_SHARD_COUNT", text);
  }
  return {};
}

std::vector<std::string> shard_inputs(const std::vector<ShardInput>& inputs, Shard shard) {
  std::vector<size_t> order(inputs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (inputs[a].size != inputs[b].size) return inputs[a].size > inputs[b].size;
    return inputs[a].path < inputs[b].path;
  });
  std::vector<uint64_t> load(size_t(shard.count), 0);
  std::vector<int> owner(inputs.size(), 0);
  for (size_t i : order) {
    const size_t least = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = int(least);
    load[least] += std::max<uint64_t>(inputs[i].size, 1);
  }
  std::vector<std::string> mine;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (owner[i] == shard.index) mine.push_back(inputs[i].path);
  return mine;
}

void check_shard_set(const std::vector<Shard>& shards, const std::vector<std::string>& names) {
  if (shards.empty()) return;
  auto text = [](Shard s) { return std::to_string(s.index) + "/" + std::to_string(s.count); };
  const int n = shards.front().count;
  if (n > int(shards.size()))  // before sizing anything by a count read from a file
    throw InputError(names[0], "settings.shard", "the set is incomplete: the run had " + std::to_string(n) +
                                                     " shards but " + std::to_string(shards.size()) + " are given");
  std::vector<std::string> owner(size_t(std::max(n, 0)));
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard s = shards[i];
    if (s.count != n || s.index < 0 || s.index >= n)
      throw InputError(names[i], "settings.shard", "is shard " + text(s) + " but " + names[0] + " is " +
                                                       text(shards[0]) + ": not one run's shards");
    std::string& first = owner[size_t(s.index)];
    if (!first.empty()) throw InputError(names[i], "settings.shard", "shard " + text(s) + " is also " + first);
    first = names[i];
  }
  std::string missing;
  for (int k = 0; k < n; ++k)
    if (owner[size_t(k)].empty()) missing += (missing.empty() ? "" : ", ") + text({k, n});
  if (!missing.empty())
    throw InputError(names[0], "settings.shard", "the set is incomplete: shard(s) " + missing + " missing");
}

}  // namespace dsa
