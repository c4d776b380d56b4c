#include "harness/impls/plugin.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "harness/impls/plugin_wire.hpp"

namespace dsa {
namespace {

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

File temp_file(const std::string& who) {
  File f(std::tmpfile(), &std::fclose);
  if (!f) throw PluginError(who + ": cannot create a temporary file: " + std::strerror(errno));
  return f;
}

std::string read_all(std::FILE* f) {
  std::string out;
  std::rewind(f);
  char buffer[1 << 16];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) out.append(buffer, n);
  return out;
}

// The plugin host is this very program when it is dsa-harness; elsewhere (the Python package)
// DSA_BINARY names it.
std::string host_binary(const std::string& who) {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    const std::string path(self);
    if (path.size() >= 11 && path.compare(path.size() - 11, 11, "dsa-harness") == 0) return path;
  }
  if (const char* env = std::getenv("DSA_BINARY"); env && *env) return env;
  throw PluginError(who + ": the plugin runs in `dsa-harness plugin-host`; set DSA_BINARY to the dsa-harness binary");
}

// The last line the child wrote starting with `prefix` ("plugin-host: " steps, "error: " failures).
std::string last_line(const std::string& text, const std::string& prefix) {
  std::string found;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (text.compare(start, prefix.size(), prefix) == 0) found = text.substr(start + prefix.size(), end - start - prefix.size());
    start = end + 1;
  }
  return found;
}

class PluginImplementation : public Implementation {
 public:
  explicit PluginImplementation(std::string library) : library_(std::move(library)) {}
  std::string name() const override { return "plugin:" + library_; }
  std::string device() const override { return "plugin"; }

 protected:
  void begin(const Batch& batch, const RunOptions& options, Results& out) override {
    const std::string who = "plugin " + library_;
    if (batch.path.empty()) throw PluginError(who + ": plugins run on batch files; this batch was not read from one");
    Results got = decode_results(run_child(batch, options, who), batch, who);
    got.name = out.name;
    got.rows_done = out.rows_done;  // what was asked for; the host padded the rest
    if (got.device.empty()) got.device = "plugin";
    got.notes = "plugin " + library_ + (got.implementation.empty() ? "" : " (" + got.implementation + ")");
    out = std::move(got);
  }
  void publish(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void select(const Batch&, const Layer&, const RunOptions&, Results&) override {}
  void plain(const Batch&, const Layer&, const RunOptions&, Results&) override {}

 private:
  // Runs `dsa-harness plugin-host LIBRARY BATCH` with the rows on stdin; its stdout is the
  // encoded Results, its stderr the steps it reached. Files, not pipes: no deadlock, no SIGPIPE.
  std::string run_child(const Batch& batch, const RunOptions& options, const std::string& who) const {
    const std::string binary = host_binary(who);
    File rows = temp_file(who), out = temp_file(who), err = temp_file(who);
    if (options.rows.empty()) std::fputs("all", rows.get());
    for (int r : options.rows) std::fprintf(rows.get(), "%d ", r);
    std::fflush(rows.get());
    std::rewind(rows.get());
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw PluginError(who + ": cannot start the plugin host: " + std::strerror(errno));
    if (pid == 0) {
      ::dup2(::fileno(rows.get()), 0);
      ::dup2(::fileno(out.get()), 1);
      ::dup2(::fileno(err.get()), 2);
      const char* argv[] = {binary.c_str(), "plugin-host", library_.c_str(), batch.path.c_str(), nullptr};
      ::execv(binary.c_str(), const_cast<char* const*>(argv));
      const char failed[] = "error: cannot run the dsa-harness binary (DSA_BINARY)\n";  // only async-signal-safe calls here
      [[maybe_unused]] const ssize_t n = ::write(2, failed, sizeof failed - 1);
      ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    const std::string log = read_all(err.get());
    if (WIFSIGNALED(status)) {
      const std::string step = last_line(log, "plugin-host: ");
      throw PluginError(who + ": crashed with signal " + std::to_string(WTERMSIG(status)) + " (" +
                        strsignal(WTERMSIG(status)) + ")" + (step.empty() ? "" : " during " + step));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::string why = last_line(log, "error: ");
      if (why.empty()) why = "the plugin host exited with " + std::to_string(WEXITSTATUS(status));
      // The host's errors already name the plugin; others (a bad batch path) get it here.
      throw PluginError(why.rfind("plugin ", 0) == 0 ? why : who + ": " + why);
    }
    return read_all(out.get());
  }

  std::string library_;
};

}  // namespace

ImplementationPtr make_plugin(const std::string& library) { return std::make_unique<PluginImplementation>(library); }

}  // namespace dsa
