// The Compare panel's right side: a second Session beside the app's, on the model the panel names
// (loaded on a background thread, so a big checkpoint never freezes the window), with its own
// prompt and what-ifs. It posts a request only when it changed; its snapshots arrive like the app's.
#pragma once
#include <future>
#include <memory>
#include <string>

#include "app/gui/session_names.h"
#include "app/session/session.h"

namespace tscope::gui {

class CompareRight {
 public:
  ~CompareRight();
  // The right side runs `modelPath` (loaded with the backend choice `backend`); a new path starts
  // a load and keeps the old session until it is done.
  void want(const std::string& modelPath, const std::string& backend);
  Session* session() { return session_.get(); }                // null before the first load is done, or after it failed
  const std::string& loading() const { return pendingPath_; }  // the path being loaded ("" none)
  const std::string& problem() const { return problem_; }      // why the last load failed ("" none)
  // Posts `request` when it differs from the last one posted to this session.
  void post(const Request& request);
  std::shared_ptr<const Snapshot> latest() const { return session_ ? session_->latest() : nullptr; }
  // Loading, computing, or posted and not yet computed.
  bool busy() const { return pending_.valid() || (session_ && (session_->busy() || (hasPosted_ && !session_->latest()))); }

 private:
  std::unique_ptr<Session> session_;
  std::string path_;  // the session's model
  std::future<std::unique_ptr<Session>> pending_;
  std::string pendingPath_;
  std::string problem_;
  std::string failedPath_;  // not loaded again until another path is asked for
  Request posted_;
  bool hasPosted_ = false;
};

}  // namespace tscope::gui
