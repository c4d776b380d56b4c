#pragma once
// Progress of a long run: a redrawn bar with an ETA on a terminal (shown once the run has taken
// more than a couple of seconds), one plain line per finished step otherwise (CI logs).
#include <chrono>
#include <cstdio>
#include <string>

namespace dsa {

class Progress {
 public:
  // `total` is the work of the whole run in any unit (e.g. rows x context per step). A null
  // `out` makes a quiet progress (library callers, tests).
  Progress(std::FILE* out, double total, bool terminal);
  static bool is_terminal(std::FILE* out);

  void begin(const std::string& label);                   // a step starts (redraws the bar)
  void advance(double work, const std::string& label);    // a step of `work` finished
  void finish();                                          // ends the bar's line
  void add_work(double work);  // work known only once an input is read (its recorded outputs)

  double eta_seconds() const;  // from the rate so far; negative when unknown

 private:
  void draw(const std::string& label);
  double elapsed() const;

  std::FILE* out_;
  double total_, done_ = 0;
  bool terminal_;
  int steps_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "45s", "3m07s", "1h02m".
std::string format_duration(double seconds);

}  // namespace dsa
