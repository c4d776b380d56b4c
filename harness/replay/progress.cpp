#include "harness/replay/progress.hpp"

#include <algorithm>
#include <cmath>

#include <unistd.h>

namespace dsa {

namespace {
constexpr double kQuietSeconds = 2.0;  // short runs never show a bar
constexpr double kRedrawSeconds = 0.2;
constexpr int kBarWidth = 28;
}  // namespace

Progress::Progress(std::FILE* out, double total, bool terminal)
    : out_(out), total_(std::max(total, 1e-9)), terminal_(terminal), start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

bool Progress::is_terminal(std::FILE* out) { return out && ::isatty(::fileno(out)) == 1; }

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::add_work(double work) { total_ += std::max(work, 0.0); }

double Progress::eta_seconds() const {
  if (done_ <= 0) return -1;
  return elapsed() * (total_ - done_) / done_;
}

std::string format_duration(double seconds) {
  if (!(seconds >= 0)) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return buf;
}

void Progress::draw(const std::string& label) {
  const auto now = std::chrono::steady_clock::now();
  if (elapsed() < kQuietSeconds || std::chrono::duration<double>(now - last_draw_).count() < kRedrawSeconds) return;
  last_draw_ = now;
  const double share = std::min(1.0, done_ / total_);
  const int filled = int(share * kBarWidth);
  std::string bar(size_t(filled), '#');
  bar.resize(kBarWidth, '.');
  std::fprintf(out_, "\r\033[K[%s] %3d%% %s ETA %s  %.60s", bar.c_str(), int(share * 100),
               format_duration(elapsed()).c_str(), format_duration(eta_seconds()).c_str(), label.c_str());
  std::fflush(out_);
  drawn_ = true;
}

void Progress::begin(const std::string& label) {
  if (out_ && terminal_) draw(label);
}

void Progress::advance(double work, const std::string& label) {
  done_ += work;
  ++steps_;
  if (!out_) return;
  if (terminal_) {
    draw(label);
    return;
  }
  std::fprintf(out_, "[%d] %s done (%3d%%, elapsed %s, ETA %s)\n", steps_, label.c_str(),
               int(std::min(1.0, done_ / total_) * 100), format_duration(elapsed()).c_str(),
               format_duration(eta_seconds()).c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (!out_) return;
  if (terminal_ && drawn_) std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
}

}  // namespace dsa
