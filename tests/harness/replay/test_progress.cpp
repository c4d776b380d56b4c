// Progress: plain lines off a terminal, with the step count and an ETA; quiet without output.
#include <cstdio>
#include <string>

#include "harness/replay/progress.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("progress: plain lines when the output is not a terminal") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  CHECK_FALSE(Progress::is_terminal(f));
  Progress p(f, 4.0, false);
  p.begin("batch-a gpu-sparse");
  p.advance(1.0, "batch-a gpu-sparse");
  p.advance(3.0, "batch-b gpu-mask");
  p.finish();
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += char(c);
  std::fclose(f);
  CHECK(text.find("[1] batch-a gpu-sparse done ( 25%") != std::string::npos);
  CHECK(text.find("[2] batch-b gpu-mask done (100%") != std::string::npos);
  CHECK(text.find("ETA") != std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
}

TEST_CASE("progress: durations and a quiet progress") {
  CHECK(format_duration(45) == "45s");
  CHECK(format_duration(187) == "3m07s");
  CHECK(format_duration(3720) == "1h02m");
  CHECK(format_duration(-1) == "?");
  Progress quiet(nullptr, 1.0, false);
  CHECK(quiet.eta_seconds() == -1);  // unknown before any work: printed as "?"
  quiet.advance(0.25, "x");          // must not crash or print
  CHECK(quiet.eta_seconds() >= 0);
  quiet.advance(0.75, "x");
  quiet.finish();
  CHECK(quiet.eta_seconds() == 0);   // all work done: nothing left
  quiet.add_work(1.0);               // an input's recorded outputs, found once it is read
  CHECK(quiet.eta_seconds() > 0);
}
