// One list of test cases run over every device, in the style of ggml's test-backend-ops: a case is a
// name and a function of the device under test and the reference device; DeviceCases (in
// tests/test_device_cases.cpp) runs every case on "reference", "cpu" and "cuda" as GoogleTest
// value-parameterised tests. A device this machine cannot make (cuda without a GPU or without a
// CUDA build) reports SKIPPED with one line saying why. The cases live in test_device_backward.cpp
// (the backward ops against the reference), test_device_gradients.cpp (against finite differences)
// test_device_recorded.cpp (recorded decode steps) and test_device_what_if.cpp (the forward's what-ifs). Plain C++: no CUDA header.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "model/core/error.h"
#include "model/nn/backend.h"
#include "model/select/backend_select.h"
#include "model/train/backward.h"
#include "model/train/device.h"
#include "tests/test_backward_helpers.h"
#include "tests/test_helpers.h"

namespace tscope::testing {

struct DeviceCase {
  std::string name;  // letters and digits: part of the test's name
  std::function<void(Device& device, Device& reference)> run;
};

// GoogleTest prints a parameter in the test's listing (and CTest's test names): the case's name,
// not the bytes of its std::function (which hold addresses, different on every run).
inline void PrintTo(const DeviceCase& deviceCase, std::ostream* out) { *out << deviceCase.name; }

// The case lists, one per file, joined by allDeviceCases().
std::vector<DeviceCase> backwardCases();
std::vector<DeviceCase> gradientCases();
std::vector<DeviceCase> recordedCases();
std::vector<DeviceCase> whatIfCases();

// Every device a case runs on. tscope_cuda_tests (the GPU lease's binary) runs the cuda one only.
inline std::vector<std::string> deviceNames() {
#ifdef TSCOPE_DEVICE_CASES_CUDA_ONLY
  return {"cuda"};
#else
  return {"reference", "cpu", "cuda"};
#endif
}

// The device of that name (the CPU with 2 threads, so its ops split work), or null with *why set.
inline std::unique_ptr<Device> makeDeviceOrNull(const std::string& name, std::string* why) {
  try {
    return makeDevice(name, 2);
  } catch (const Error& e) {
    *why = e.what();
    return nullptr;
  }
}

// How far a device's backward ops may stray from the reference's: `outputs`, the normalised max
// error of every output (max |device - reference| / max |reference|); `loss`, the returned loss,
// relative. The CPU's float sums are close to the reference's double; CUDA's float accumulation
// orders differ more (a few roundings of the largest term; a wrong index or a missing += gives
// errors of order 1).
struct DeviceTolerance {
  double outputs;
  double loss;
};
inline DeviceTolerance toleranceOf(Device& device) {
  if (device.name() == "cuda") return {2e-5, 1e-5};
  return {1e-5, 1e-6};
}

using Pointers = std::vector<float*>;
using BackwardOp = std::function<void(BackwardOps&, const Pointers& in, const Pointers& out)>;

// Runs `op` with the device's backward ops on device copies of `inputs` and of the (pre-filled)
// `outputs`; returns the outputs, downloaded.
inline std::vector<std::vector<float>> runBackward(Device& device, const std::vector<std::vector<float>>& inputs,
                                                   const std::vector<std::vector<float>>& outputs, const BackwardOp& op) {
  Backend& memory = device.forward();
  std::vector<Buffer> deviceIn, deviceOut;
  Pointers in, out;
  for (const auto& v : inputs) in.push_back(deviceIn.emplace_back(toDevice(memory, v)).data());
  for (const auto& v : outputs) out.push_back(deviceOut.emplace_back(toDevice(memory, v)).data());
  op(device.backward(), in, out);
  std::vector<std::vector<float>> result;
  for (const auto& b : deviceOut) result.push_back(toHost(memory, b));
  return result;
}

// Runs `op` on the reference device and on `device` from the same inputs and (pre-filled) outputs,
// so the += contract is checked too, and expects every output to agree within `tolerance` (the
// device's own when negative). Returns the device's outputs.
inline std::vector<std::vector<float>> expectMatchesReference(Device& device, Device& reference, const std::string& what,
                                                              const std::vector<std::vector<float>>& inputs,
                                                              const std::vector<std::vector<float>>& outputs, const BackwardOp& op,
                                                              double tolerance = -1) {
  if (tolerance < 0) tolerance = toleranceOf(device).outputs;
  EXPECT_EQ(device.backward().name(), device.name());
  const auto expected = runBackward(reference, inputs, outputs, op);
  const auto actual = runBackward(device, inputs, outputs, op);
  for (size_t i = 0; i < actual.size(); ++i) {
    const auto difference = compare(actual[i], expected[i]);
    EXPECT_LT(difference.relative(), tolerance) << what << ", output " << i << ": " << difference.describe();
  }
  return actual;
}

// The cases that compare a device with the reference have nothing to do on the reference itself.
#define SKIP_ON_THE_REFERENCE(device) \
  if ((device).name() == "reference") GTEST_SKIP() << "the reference is what the other devices are compared with"

}  // namespace tscope::testing
