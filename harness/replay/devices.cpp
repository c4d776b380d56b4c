#include "harness/replay/devices.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "gpu/gpu_implementations.hpp"
#include "reports/printers.hpp"

extern char** environ;

namespace dsa {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// The command line of one device's share: the same replay as sub-shard `sub` of `subs`.
std::vector<std::string> device_args(const ReplayOptions& o, Shard sub, int device, const std::string& dir) {
  char tolerance[64];
  std::snprintf(tolerance, sizeof tolerance, "%.17g", o.tolerance);
  std::vector<std::string> a = {"dsa-harness", "replay"};
  a.insert(a.end(), o.inputs.begin(), o.inputs.end());
  if (!o.impls.empty()) a.insert(a.end(), {"--impl", join(o.impls)});
  a.insert(a.end(), {"--rows", o.rows, "--seed", std::to_string(o.seed), "--repeat", std::to_string(o.repeat),
                     "--tolerance", tolerance, "--shard", std::to_string(sub.index) + "/" + std::to_string(sub.count),
                     "--devices", std::to_string(device), "-o", dir});
  if (o.resume) a.push_back("--resume");
  return a;
}

// The GPU ids this process can use, as CUDA_VISIBLE_DEVICES and nvidia-smi number them: CUDA
// sees the first device_count() entries of CUDA_VISIBLE_DEVICES (it stops at the first id that
// does not exist), or 0..count-1 when the variable is not set.
std::vector<std::string> visible_gpus() {
  const int count = gpu::device_count();
  std::vector<std::string> ids;
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::stringstream list(env);
    std::string id;
    while (std::getline(list, id, ',')) ids.push_back(id.substr(0, id.find_last_not_of(" ") + 1));
  } else {
    for (int i = 0; i < count; ++i) ids.push_back(std::to_string(i));
  }
  ids.resize(std::min(ids.size(), size_t(count)));
  return ids;
}

// Starts this program on one device: CUDA_VISIBLE_DEVICES narrows the child to that GPU.
pid_t spawn_on_device(const std::string& program, const std::vector<std::string>& args, int device) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) env_text.push_back(*e);
  env_text.push_back("CUDA_VISIBLE_DEVICES=" + std::to_string(device));
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0)
    throw EnvironmentError("--devices: cannot start a replay process for device " + std::to_string(device));
  return pid;
}

// --devices with several GPUs: one process per device, each on a sub-shard of this shard's
// share (sub-shard I*D+k of N*D), then one merged report. Every process writes its own folder
// DIR/device-K (with its own cases.jsonl, so --resume works per device).
}  // namespace

// A GPU that does not exist would otherwise surface only after the run, as shards that "ran on
// different GPU models".
void check_devices(const std::vector<int>& devices) {
  std::set<int> seen;
  for (int d : devices)
    if (!seen.insert(d).second) throw InputError("--devices", "GPU " + std::to_string(d), "is named twice");
  if (devices.empty()) return;
  const std::vector<std::string> ids = visible_gpus();
  std::string here = ids.empty() ? "no GPU here: " + gpu::unavailable_reason() : "GPUs here:";
  for (const std::string& id : ids) here += " " + id;
  if (const char* env = std::getenv("CUDA_VISIBLE_DEVICES")) here += std::string(" (CUDA_VISIBLE_DEVICES=") + env + ")";
  for (int d : devices)
    if (std::find(ids.begin(), ids.end(), std::to_string(d)) == ids.end())
      throw InputError("--devices", "GPU " + std::to_string(d), "does not exist (" + here + ")");
}

Report run_on_devices(const ReplayOptions& o) {
  const Shard outer = o.shard ? *o.shard : shard_from_environment();
  const int d = int(o.devices.size());
  std::vector<std::string> dirs;
  std::vector<pid_t> pids;
  for (int k = 0; k < d; ++k) {
    dirs.push_back(o.out_dir + "/device-" + std::to_string(o.devices[size_t(k)]));
    const Shard sub{outer.index * d + k, outer.count * d};
    pids.push_back(spawn_on_device(o.program, device_args(o, sub, o.devices[size_t(k)], dirs.back()), o.devices[size_t(k)]));
  }
  std::string failed;
  for (int k = 0; k < d; ++k) {
    int status = 0;
    ::waitpid(pids[size_t(k)], &status, 0);
    const bool verdict = WIFEXITED(status) && WEXITSTATUS(status) != kExitInvalid;
    if (!verdict) failed += (failed.empty() ? "" : ", ") + std::to_string(o.devices[size_t(k)]);
  }
  if (!failed.empty())
    throw EnvironmentError("--devices: the replay on device(s) " + failed + " failed (see its message above)");
  std::vector<Report> parts;
  for (const std::string& dir : dirs) parts.push_back(read_report(dir + "/report.json"));
  Report report = merge_reports(parts, dirs);
  report.environment.devices = o.devices;
  report.settings.shard = outer.index;
  report.settings.shards = outer.count;
  report.shards_merged.clear();
  finalize_report(report);
  reports::write_reports(report, o.out_dir);
  return report;
}

}  // namespace dsa
