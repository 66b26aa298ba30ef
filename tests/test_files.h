// Helpers shared by the IO tests: a scratch directory removed with everything in it, whole-file
// byte reads and writes, checks on the one-line error messages, and running tscope-cli.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "model/core/error.h"

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

// Runs `make` while this process holds an exclusive lock on `lockPath` (created if missing), so of
// the test processes ctest runs at once, one makes a shared cache (node's reference ids) and the
// others wait for it and then find it made, instead of each making it again beside the first.
inline void whileLocked(const std::string& lockPath, const std::function<void()>& make) {
  const int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << "cannot open the lock file " << lockPath;
  ASSERT_EQ(::flock(fd, LOCK_EX), 0) << "cannot lock " << lockPath;
  make();
  ::flock(fd, LOCK_UN);
  ::close(fd);
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
  for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << "message \"" << message << "\" lacks \"" << part << "\"";
}

// One tscope-cli run: its exit code, stdout and stderr.
struct CliRun {
  int exitCode = -1;
  bool killed = false;  // ended by SIGKILL (the shell reports 128 + 9)
  std::string out, err;
};

// Runs `tscope-cli arguments` through the shell (stderr into dir), with `env` ("NAME=value ...")
// in front when given.
inline CliRun runCli(const std::string& arguments, const ScratchDir& dir, const std::string& env = "") {
  const std::string errFile = dir.file("stderr.txt");
  const std::string command = env + " " + std::string(TSCOPE_CLI) + " " + arguments + " 2>" + errFile;
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  run.killed = run.exitCode == 128 + 9;
  run.err = readBytes(errFile);
  return run;
}

}  // namespace tscope::testing
