#include "harness/bench/torch_peer.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "core/errors.hpp"

extern char** environ;

namespace dsa {

namespace {

// Runs argv[0] found on PATH with stdout and stderr into `log`; returns the exit status or -1.
int run_child(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int err = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string tail_of(const std::string& path, size_t bytes) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string t = text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  for (char& ch : t)
    if (ch == '\n') ch = ' ';
  return t;
}

}  // namespace

std::string default_torch_script() { return std::string(DSA_SOURCE_DIR) + "/bench/torch_mask_path.py"; }

ImplRun torch_run_from_json(const nlohmann::json& j, const std::string& batch_id, const std::string& file) {
  ImplRun run;
  run.batch_id = batch_id;
  run.impl = kTorchPeerImpl;
  const char* key = "stages";
  try {
    key = "device";
    run.device = j.at(key).get<std::string>();
    key = "peak_bytes";
    if (!json_integer_in(j.at(key), LLONG_MIN, LLONG_MAX)) throw std::invalid_argument("not an integer in range");
    run.peak_device_bytes = j.at(key).get<long long>();
    key = "stages";
    for (const nlohmann::json& s : j.at(key)) {
      const std::string stage = s.at("stage").get<std::string>();
      if (!json_integer_in(s.at("samples"), INT_MIN, INT_MAX))
        throw std::invalid_argument("samples: not an integer in range");
      run.kernels.push_back(kernel_figure(std::string(kTorchPeerImpl) + "/" + stage, s.at("layer").get<std::string>(),
                                          1, s.at("samples").get<int>(), s.at("median_ms").get<double>(),
                                          s.at("min_ms").get<double>(), s.at("max_ms").get<double>(), 0, 0));
    }
  } catch (const std::exception& e) {
    throw InputError(file, key, std::string("malformed torch peer output: ") + e.what());
  }
  if (run.kernels.empty()) throw InputError(file, "stages", "the torch peer timed no stage");
  return run;
}

ImplRun run_torch_peer(const TorchPeerOptions& o, const std::string& batch_file, const std::vector<int>& rows,
                       const std::string& batch_id, const std::string& json_path) {
  const std::string script = o.script.empty() ? default_torch_script() : o.script;
  const std::string log = json_path + ".log";
  std::vector<std::string> args = {o.python, script, batch_file, "--samples", std::to_string(o.samples),
                                   "--json", json_path};
  if (!rows.empty()) {
    std::string list;
    for (int r : rows) list += (list.empty() ? "" : ",") + std::to_string(r);
    args.insert(args.end(), {"--rows", list});
  }
  const int rc = run_child(args, log);
  ImplRun failed;
  failed.batch_id = batch_id;
  failed.impl = kTorchPeerImpl;
  failed.status = Disposition::not_run;
  if (rc != 0) {
    failed.reason = o.python + " " + script + (rc < 0 ? " could not be started" : " exited " + std::to_string(rc)) +
                    ": " + tail_of(log, 400);
    return failed;
  }
  std::ifstream in(json_path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    failed.reason = json_path + ": not valid JSON (" + e.what() + ")";
    return failed;
  }
  return torch_run_from_json(j, batch_id, json_path);
}

}  // namespace dsa
