// Helpers shared by the IO tests: a scratch directory removed with everything in it, whole-file
// byte reads and writes, and checks on the one-line error messages.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "model/error.h"

namespace tscope::testing {

// A fresh directory under the system temp directory, removed with everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix = "tscope_test") {
    std::random_device entropy;
    root_ = std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(entropy()));
    std::filesystem::create_directories(root_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return (root_ / name).string(); }
  const std::filesystem::path& path() const { return root_; }

 private:
  std::filesystem::path root_;
};

inline std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void writeBytes(const std::string& path, const std::string& bytes) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);  // a new file, not a truncated one: ext4 flushes truncate-and-rewrite on close
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// Runs `action` and returns the tscope::Error message it throws (a test failure if it throws none).
inline std::string errorMessage(const std::function<void()>& action) {
  try {
    action();
  } catch (const tscope::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tscope::Error";
  return "";
}

// The message is one line and names every part.
inline void expectMentions(const std::string& message, std::initializer_list<std::string> parts) {
  EXPECT_EQ(message.find('\n'), std::string::npos) << "message spans lines: " << message;
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "message \"" << message << "\" lacks \"" << part << "\"";
}

}  // namespace tscope::testing
