// replay --devices 0,1 on a host with two GPUs: one process per GPU, each in its own folder, merged
// into a report equal to one whole run but for the devices it records.
#include <unistd.h>

#include <filesystem>

#include "harness/replay/replay.hpp"
#include "tests/harness/replay/replay_fixture.hpp"
#include "tests/catch.hpp"

using namespace dsa;
namespace fs = std::filesystem;
using nlohmann::json;
using test::quick;
using test::TempDir;

namespace {

json masked_without_devices(const Report& r) {
  json j = mask_volatile(report_to_json(r));
  j["environment"]["devices"] = json::array();
  return j;
}

}  // namespace

TEST_CASE("replay: --devices 0,1 runs one process per GPU and merges them into the whole run") {
  const TempDir tmp("devices");
  const fs::path& dir = tmp.path;
  const Report whole = run_replay(quick((dir / "whole").string()));
  ReplayOptions o = quick((dir / "spread").string());
  o.devices = {0, 1};
  o.program = DSA_BINARY;
  const Report spread = run_replay(o);
  CHECK(fs::exists(dir / "spread/device-0/report.json"));
  CHECK(fs::exists(dir / "spread/device-1/report.json"));
  CHECK(spread.environment.devices == std::vector<int>{0, 1});
  const json expected = masked_without_devices(whole);
  CHECK(masked_without_devices(spread) == expected);
  CHECK(masked_without_devices(read_report((dir / "spread/report.json").string())) == expected);
}
