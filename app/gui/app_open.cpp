// Opening another model without stopping the window: the model loads, and its Session (backend,
// weights upload, worker) is made, on the "open model" task channel (app/session/tasks.h) while
// the old model's panels keep drawing; the frame that finds it loaded swaps it in, and the old
// Session is closed (its running forward cancelled and joined) on the "close model" channel.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "app/gui/app.h"

namespace tscope::gui {

void App::pollOpen() {
  if (pendingOpen_.first.empty()) return;
  TaskChannel<OpenedModel>& channel = tasks_.channel<OpenedModel>("open model");
  if (pendingOpen_ != postedOpen_) {  // a new open, or another model picked while one loads
    postedOpen_ = pendingOpen_;
    openSince_ = std::chrono::steady_clock::now();
    channel.post([id = ++opensPosted_, path = pendingOpen_.first, prompt = pendingOpen_.second,
                  backend = session_->backendChoice()](TaskScope<OpenedModel>& scope) {
      auto opened = std::make_shared<OpenedModel>();
      opened->id = id;
      opened->path = path;
      opened->prompt = prompt;
      try {
        // Each tensor placed reports progress; a newer open or a cancel stops the load there.
        LoadedModel model = loadModel(path, [&scope](int done, int total) {
          if (scope.cancelled()) throw Cancelled();
          scope.progress(done, total);
        });
        opened->session = std::make_shared<Session>(std::move(model), backend);
      } catch (const Cancelled&) {
        return;  // its arena and mappings are freed here, off the UI thread
      } catch (const std::exception& e) {
        opened->error = e.what();
      }
      // A newer open replaced this one: its session is dropped here, off the UI thread.
      if (!scope.cancelled()) scope.publish(std::move(opened));
    });
    return;
  }
  const std::shared_ptr<const OpenedModel> opened = channel.latest();
  if (!opened || opened->id != opensPosted_) return;  // still loading
  pendingOpen_ = postedOpen_ = {};
  finishOpen(*opened);
}

void App::cancelOpen() {
  if (pendingOpen_.first.empty()) return;
  showMessage("stopped opening " + pendingOpen_.first + "; " + session_->modelPath() + " stays open", MessageKind::Info);
  pendingOpen_ = postedOpen_ = {};
  pendingState_.reset();  // a session file's state was for the model that did not open
  ++opensPosted_;         // a result already published is not taken
  // Latest wins: this empty task tells the running load to stop at its next tensor.
  tasks_.channel<OpenedModel>("open model").post([](TaskScope<OpenedModel>&) {});
}

std::string App::openingProgress() const {
  if (pendingOpen_.first.empty()) return "";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - openSince_).count();
  const WorkProgress p = tasks_.progress("open model");
  char text[400];
  if (p.total > 0)
    std::snprintf(text, sizeof text, "opening %s: tensor %d of %d, %.1f s (Esc stops)", modelDisplayName(pendingOpen_.first).c_str(), p.done, p.total,
                  seconds);
  else std::snprintf(text, sizeof text, "opening %s... %.1f s (Esc stops)", modelDisplayName(pendingOpen_.first).c_str(), seconds);
  return text;
}

void App::finishOpen(const OpenedModel& opened) {
  if (!opened.session) {
    showMessage(opened.error, MessageKind::Error);
    return;
  }
  addRecent(opened.session->modelPath());
  modelPathInput_ = opened.session->modelPath();  // the path field names the model on screen (a lesson, the browser, a session opened it)
  const bool wasEncoderDecoder = session_->config().isEncoderDecoder(), wasImage = session_->config().isImage();
  std::shared_ptr<Session> old = std::exchange(session_, std::move(opened.session));
  snapshot_.reset();
  // The old session finishes (or cancels) its forward and joins its worker on a task thread; the
  // queue keeps every closing (latest-wins would drop a waiting one here, on the UI thread).
  tasks_.channel<bool>("close model", WorkerPolicy::Queue).post([old = std::move(old)](TaskScope<bool>&) mutable { old.reset(); });
  // Every cache was built from the old model's snapshots (whose ids the new session reuses).
  makeModelPanels();
  lastExportName_.clear();
  const ModelConfig& c = session_->config();
  state_.layer = std::min(state_.layer, c.n_layer - 1);
  state_.head = std::min(state_.head, c.n_head - 1);
  state_.token = -1;
  state_.moeTopK = 0;
  state_.moeCapacityFactor = -1;
  state_.moeExpertChoice = c.moe_routing == MoeRoutingKind::ExpertChoice;
  if (!opened.prompt.empty()) {
    state_.prompt = opened.prompt;
  } else if (c.isEncoderDecoder() != wasEncoderDecoder) {
    // An encoder-decoder's prompt is its target (the source is AppState::source): a decoder-only
    // prompt is set aside for the way back, and the target starts empty.
    std::swap(state_.prompt, promptAside_);
    if (!c.isEncoderDecoder() && state_.prompt.empty()) state_.prompt = AppState{}.prompt;  // the app started on an encoder-decoder
  }
  state_.generatedIds.clear();              // the old model's token ids
  fitImageInput(c.isImage() && !wasImage);  // an image model opens in the Vision panel, with a picture to read
  keepFittingInterventions(state_.interventions, c);
  if (std::string dropped = keepFittingWhatIfs(state_.whatIfs, c); !dropped.empty()) showMessage(dropped, MessageKind::Warning);
  showMessage("opened " + opened.path, MessageKind::Info);
  // Stay on the panel on screen; one that shows its own run (Training) opens the model in the default panel.
  // Back from an image model, the Vision panel gives way to the default one.
  const bool leftVision = wasImage && !c.isImage() && state_.panel == PanelId::Vision;
  selectPanel(panelInfo(state_.panel).has(kOwnRun) || leftVision ? AppState{}.panel : state_.panel);
  post();
}

}  // namespace tscope::gui
