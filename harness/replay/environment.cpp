#include "harness/replay/environment.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <sys/utsname.h>
#include <unistd.h>

#include "gpu/gpu_implementations.hpp"

#ifndef DSA_GIT_COMMIT
#define DSA_GIT_COMMIT "unknown"
#endif

namespace dsa {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  const size_t b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

std::string command_output(const std::string& command) {
  std::string out;
  if (std::FILE* p = ::popen(command.c_str(), "r")) {
    std::array<char, 512> buf;
    while (std::fgets(buf.data(), int(buf.size()), p)) out += buf.data();
    ::pclose(p);
  }
  return out;
}

}  // namespace

const char* build_commit() { return DSA_GIT_COMMIT; }

std::string version_text() { return std::string("dsa-harness ") + DSA_VERSION + " (commit " + build_commit() + ")"; }

std::string describe_cpu() {
  std::ifstream info("/proc/cpuinfo");
  std::string line, model = "model unknown";
  while (std::getline(info, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = trim(line.substr(line.find(':') + 1));
      break;
    }
  return "cpu: " + model + " (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

SmiInfo parse_nvidia_smi(const std::string& query_line, const std::string& banner) {
  SmiInfo info;
  std::stringstream fields(query_line.substr(0, query_line.find('\n')));
  std::string field;
  std::vector<std::string> parts;
  while (std::getline(fields, field, ',')) parts.push_back(trim(field));
  if (parts.size() >= 1) info.name = parts[0];
  if (parts.size() >= 2) info.driver = parts[1];
  // The clock at start is the idle clock (345 MHz on an idle H200), not the one the kernels ran
  // at; the maximum is what a busy GPU boosts to, so it leads and the idle reading follows.
  if (parts.size() >= 4) info.sm_clock = parts[3] + " max (" + parts[2] + " idle at start)";
  else if (parts.size() >= 3) info.sm_clock = parts[2] + " at start";
  std::smatch m;
  if (std::regex_search(banner, m, std::regex("CUDA Version: *([0-9.]+)"))) info.cuda = m[1];
  return info;
}

EnvironmentInfo describe_environment(const std::vector<int>& devices) {
  EnvironmentInfo env;
  env.devices = devices;
  env.commit = build_commit();
  env.started_at = utc_timestamp();
  env.gpu_detail = gpu::describe_device();
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0) env.host = host;
  struct utsname u {};
  if (::uname(&u) == 0) env.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  if (DSA_HAVE_CUDA && on_path("nvidia-smi")) {
    const std::string id = devices.empty() ? "" : " -i " + std::to_string(devices.front());
    const SmiInfo smi = parse_nvidia_smi(
        command_output("nvidia-smi" + id + " --query-gpu=name,driver_version,clocks.sm,clocks.max.sm "
                       "--format=csv,noheader 2>/dev/null"),
        command_output("nvidia-smi 2>/dev/null"));
    if (!smi.name.empty()) env.gpu = smi.name;
    env.driver = smi.driver;
    env.sm_clock = smi.sm_clock;
    env.cuda = smi.cuda;
  }
  // Without nvidia-smi the device's own description names the model (up to its first comma).
  if (DSA_HAVE_CUDA && env.gpu == "none" && env.gpu_detail.rfind("none", 0) != 0 && env.gpu_detail.rfind("no ", 0) != 0)
    env.gpu = trim(env.gpu_detail.substr(0, env.gpu_detail.find(',')));
  return env;
}

}  // namespace dsa
