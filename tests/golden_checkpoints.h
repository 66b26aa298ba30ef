// The tiny checkpoints a golden reference script writes (tests/golden/*.py, from the HF layout and an
// independent float64 forward), once per test process.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "tests/test_files.h"

namespace tscope::testing {

// Runs `python3 tests/golden/SCRIPT FOLDER ARGS` once per process for each `script` + `args` into a
// scratch folder named after `prefix`, and returns the folder. A run that fails (or no python3 with
// torch and numpy) is a test failure saying so, every time it is asked for.
inline const std::filesystem::path& goldenCheckpoints(const std::string& prefix, const std::string& script, const std::string& args = "") {
  struct Written {
    std::unique_ptr<ScratchDir> dir;
    bool ok = false;
  };
  static std::map<std::string, Written> cache;
  Written& w = cache[script + " " + args];
  if (!w.dir) {
    w.dir = std::make_unique<ScratchDir>(prefix);
    const std::string python = TSCOPE_PYTHON_WITH_TORCH;
    const std::string command = python + " " + TSCOPE_SOURCE_DIR + "/tests/golden/" + script + " " + w.dir->path().string() + " " + args;
    w.ok = !python.empty() && std::system(command.c_str()) == 0;
  }
  EXPECT_TRUE(w.ok) << script << " " << args << " failed (or no python3 with torch and numpy: run scripts/setup.sh)";
  return w.dir->path();
}

}  // namespace tscope::testing
