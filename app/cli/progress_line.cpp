// The training progress line (progress_line.h).
#include "app/cli/progress_line.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <unistd.h>

namespace tscope::cli {

namespace {

std::string duration(double seconds) {
  char text[32];
  const long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600) std::snprintf(text, sizeof text, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else if (s >= 60) std::snprintf(text, sizeof text, "%ldm%02lds", s / 60, s % 60);
  else std::snprintf(text, sizeof text, "%lds", s);
  return text;
}

std::atomic<bool> interrupted{false};
void onInterrupt(int) { interrupted = true; }

}  // namespace

const std::atomic<bool>& stopOnInterrupt() {
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
  return interrupted;
}

ProgressLine::ProgressLine(int total, std::string prefix) : total_(total), prefix_(std::move(prefix)), tty_(::isatty(STDERR_FILENO)) {}

void ProgressLine::update(const Trainer& trainer, double tokensPerSecond, bool force) {
  const int done = trainer.stepsDone();
  const auto now = std::chrono::steady_clock::now();
  if (!force) {
    if (tty_ && now - lastDraw_ < std::chrono::milliseconds(200)) return;
    if (!tty_ && done < nextLineStep_) return;
  }
  lastDraw_ = now;
  nextLineStep_ = done + std::max(1, total_ / 20);
  const int width = 24, filled = total_ > 0 ? width * done / total_ : width;
  std::string bar(filled, '#');
  bar.resize(width, '.');
  const double perStep = trainer.stepsDone() > 0 ? trainer.totalSeconds() / trainer.stepsDone() : 0;
  char line[384];
  std::string val = trainer.history().evals.empty() ? "-" : std::to_string(trainer.history().evals.back().loss).substr(0, 5);
  std::snprintf(line, sizeof line, "%s[%s] step %d/%d  loss %.3f  val %s  %.0f tok/s  ETA %s", prefix_.c_str(), bar.c_str(), done, total_,
                recentLoss(trainer.history(), 20), val.c_str(), tokensPerSecond, duration(perStep * (total_ - done)).c_str());
  if (tty_) std::fprintf(stderr, "\r%s\x1b[K", line);
  else std::fprintf(stderr, "%s\n", line);
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (tty_) std::fputc('\n', stderr);
}

}  // namespace tscope::cli
