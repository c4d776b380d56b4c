#pragma once
// Deterministic shares of the inputs for runs spread over a cluster's own scheduler (a Slurm
// array, a Kubernetes Indexed Job): every shard computes the same assignment from the same list.
#include <cstdint>
#include <string>
#include <vector>

namespace dsa {

struct Shard {
  int index = 0, count = 1;
};

// "I/N" with 0 <= I < N. Throws InputError("--shard", text, rule).
Shard parse_shard(const std::string& text);

// From the environment: a Slurm array task (I = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN,
// N = SLURM_ARRAY_TASK_COUNT), else a Kubernetes Indexed Job (I = JOB_COMPLETION_INDEX,
// N = DSA_SHARD_COUNT), else 0/1. `getenv` is injectable for tests.
Shard shard_from_environment(const char* (*getenv_fn)(const char*) = nullptr);

struct ShardInput {
  std::string path;
  uint64_t size = 0;  // bytes: the cost estimate
};

// The inputs of shard `shard`, in the order given. Balanced by size: largest first, each to the
// least loaded shard (ties to the lowest index); ties in size by path. Every input lands in
// exactly one shard.
std::vector<std::string> shard_inputs(const std::vector<ShardInput>& inputs, Shard shard);

// A set of shard reports to merge must be one whole run: the same N everywhere and every index
// 0..N-1 exactly once. `names` (the report folders) go into the message. Throws InputError
// naming the missing, extra or mismatched shards.
void check_shard_set(const std::vector<Shard>& shards, const std::vector<std::string>& names);

}  // namespace dsa
