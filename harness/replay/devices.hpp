#pragma once
// `replay --devices 0,1,...`: one replay process per GPU of this host, each on a sub-shard, then
// one merged report.
#include "harness/replay/replay.hpp"

namespace dsa {

// --devices is checked before any process starts: a GPU named twice, or one that does not exist
// here, is an InputError naming the GPUs that do (a process started for one GPU passes it too).
void check_devices(const std::vector<int>& devices);

// Runs one child process per device in o.devices (CUDA_VISIBLE_DEVICES narrows each to its GPU),
// each writing DIR/device-K, and merges their reports into DIR. Throws EnvironmentError when a
// child cannot start or ends with exit 4.
Report run_on_devices(const ReplayOptions& o);

}  // namespace dsa
