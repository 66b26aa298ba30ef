// The runner of tests/device_cases.h: every case of the one list (backwardCases, gradientCases,
// recordedCases) on every device, as DeviceCases.Run/<case>_<device>. A device this machine cannot
// make skips with the reason; the reference device is made once per test, as the device under test.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tests/device_cases.h"

using namespace tscope;
using namespace tscope::testing;

namespace {

std::vector<DeviceCase> allDeviceCases() {
  std::vector<DeviceCase> cases;
  for (auto part : {backwardCases, gradientCases, recordedCases, whatIfCases})
    for (auto& c : part()) cases.push_back(std::move(c));
  return cases;
}

class DeviceCases : public ::testing::TestWithParam<std::tuple<std::string, DeviceCase>> {};

TEST_P(DeviceCases, Run) {
  const auto& [deviceName, deviceCase] = GetParam();
  std::string why;
  auto device = makeDeviceOrNull(deviceName, &why);
  if (!device) GTEST_SKIP() << "no " << deviceName << " device here: " << why;
  auto reference = makeDevice("reference");
  deviceCase.run(*device, *reference);
}

std::string caseName(const ::testing::TestParamInfo<DeviceCases::ParamType>& info) {
  return std::get<1>(info.param).name + "_" + std::get<0>(info.param);
}

INSTANTIATE_TEST_SUITE_P(, DeviceCases, ::testing::Combine(::testing::ValuesIn(deviceNames()), ::testing::ValuesIn(allDeviceCases())), caseName);

}  // namespace
