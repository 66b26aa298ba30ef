// Timing the app's Session from a benchmark: post a request, wait for the snapshot that answers it
// (polling every 50 us, as no frame loop is there to wait), and the median of a few runs.
#pragma once
#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "app/session/session.h"

namespace tscope::bench {

// Milliseconds from posting `request` to its snapshot, which lands in `snapshot`.
inline double postToSnapshot(session::Session& session, const session::Request& request, std::shared_ptr<const session::Snapshot>& snapshot) {
  const uint64_t before = session.latest() ? session.latest()->id : 0;
  const auto t0 = std::chrono::steady_clock::now();
  session.post(request);
  for (;;) {
    auto latest = session.latest();
    if (latest && latest->id > before) {
      snapshot = std::move(latest);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace tscope::bench
