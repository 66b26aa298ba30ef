// What tscope-cli's training commands (train, compare) share: the progress line on stderr (a bar
// with the step, the smoothed loss, the latest validation loss, tokens/s and the ETA, redrawn in
// place on a terminal at most 5 times a second, one line per ~5% of the run otherwise) and Ctrl-C.
#pragma once
#include <atomic>
#include <chrono>
#include <string>

#include "model/train/trainer.h"

namespace tscope::cli {

// Installs SIGINT and SIGTERM handlers that set the returned flag (the command stops between steps).
const std::atomic<bool>& stopOnInterrupt();

class ProgressLine {
 public:
  // total: the run's steps; prefix: written before the bar (e.g. "copy 1/2 "), may be empty.
  explicit ProgressLine(int total, std::string prefix = "");
  // force: draw now (the last step) whatever the rate limit.
  void update(const Trainer& trainer, double tokensPerSecond, bool force);
  void finish();  // ends the line on a terminal

 private:
  int total_;
  std::string prefix_;
  bool tty_;
  int nextLineStep_ = 0;
  std::chrono::steady_clock::time_point lastDraw_{};
};

}  // namespace tscope::cli
