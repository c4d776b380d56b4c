// The environment a report records.
#include "harness/replay/environment.hpp"
#include "tests/catch.hpp"

using namespace dsa;

TEST_CASE("environment: nvidia-smi output is parsed into model, driver, clocks, CUDA") {
  const SmiInfo smi = parse_nvidia_smi("NVIDIA H200, 570.124.06, 345 MHz, 1980 MHz\n",
                                       "| NVIDIA-SMI 570.124.06   Driver Version: 570.124.06   CUDA Version: 12.8     |");
  CHECK(smi.name == "NVIDIA H200");
  CHECK(smi.driver == "570.124.06");
  CHECK(smi.sm_clock == "1980 MHz max (345 MHz idle at start)");
  CHECK(parse_nvidia_smi("NVIDIA H200, 570.124.06, 345 MHz\n", "").sm_clock == "345 MHz at start");
  CHECK(smi.cuda == "12.8");
  CHECK(parse_nvidia_smi("", "").name.empty());
}

TEST_CASE("environment: version, commit, host and a UTC timestamp are recorded") {
  const EnvironmentInfo env = describe_environment({3});
  CHECK(env.version == DSA_VERSION);
  CHECK(!env.commit.empty());
  CHECK(!env.host.empty());
  CHECK(env.devices == std::vector<int>{3});
  CHECK(env.started_at.size() == 20);
  CHECK(env.started_at.back() == 'Z');
  CHECK(!env.gpu.empty());
}

TEST_CASE("environment: the processor recorded with CPU outputs") {
  const std::string cpu = describe_cpu();
  CHECK(cpu.rfind("cpu: ", 0) == 0);
  CHECK(cpu.find(" threads)") != std::string::npos);
  CHECK(cpu.size() > std::string("cpu:  (1 threads)").size());
}
