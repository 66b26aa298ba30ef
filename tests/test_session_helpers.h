// Driving the app's Session (no GL) from a test: post a request and wait for its snapshot.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "app/session/session.h"

namespace tscope::testing {

// Posts `request` and waits (at most 2 minutes) for the snapshot computed for it.
inline std::shared_ptr<const session::Snapshot> computeSnapshot(session::Session& session, const session::Request& request) {
  session.post(request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (session.busy() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_FALSE(session.busy()) << "the session did not finish within 2 minutes";
  return session.latest();
}

}  // namespace tscope::testing
