// The Compare panel's right-hand session (compare_right.h).
#include "app/gui/panels/compare/compare_right.h"

#include <chrono>

#include "model/io/model_io.h"

namespace tscope::gui {

CompareRight::~CompareRight() {
  if (pending_.valid()) pending_.wait();  // a load in flight finishes before its session goes
}

void CompareRight::want(const std::string& modelPath, const std::string& backend) {
  if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    try {
      session_ = pending_.get();
      path_ = pendingPath_;
      problem_.clear();
      hasPosted_ = false;
    } catch (const std::exception& e) {
      problem_ = std::string("the right side's model: ") + e.what();
      failedPath_ = pendingPath_;
    }
    pendingPath_.clear();
  }
  if (modelPath.empty() || (session_ && path_ == modelPath) || pendingPath_ == modelPath || failedPath_ == modelPath || pending_.valid()) return;
  failedPath_.clear();
  pendingPath_ = modelPath;
  pending_ = std::async(std::launch::async, [modelPath, backend] { return std::make_unique<Session>(loadModel(modelPath), backend); });
}

void CompareRight::post(const Request& request) {
  if (!session_ || (hasPosted_ && posted_ == request)) return;
  session_->post(request);
  posted_ = request;
  hasPosted_ = true;
}

}  // namespace tscope::gui
