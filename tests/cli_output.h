// What the CLI tests read of a tscope-cli run: its stdout as JSON (the run must have exited 0) and
// its stderr as the one line an error is.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/test_files.h"

namespace tscope::testing {

inline nlohmann::json parsed(const CliRun& run) {
  EXPECT_EQ(run.exitCode, 0) << run.err;
  try {
    return nlohmann::json::parse(run.out);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << "output is not JSON: " << e.what();
    return nlohmann::json();
  }
}

// stderr without its newline; fails when it holds more than one line.
inline std::string oneLine(const CliRun& run) {
  std::string err = run.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "more than one line on stderr: " << run.err;
  return err;
}

}  // namespace tscope::testing
