// Writes the GUI tests' report of the live window (see ui_report.h).
#include "app/gui/ui_report.h"

#include <algorithm>
#include <imgui.h>

#include <cmath>

#include "app/gui/app.h"
#include "model/io/npy.h"

namespace tscope::gui {

nlohmann::json regionsJson(const SharedView& shared) {
  nlohmann::json regions = nlohmann::json::object();
  for (const auto& [name, r] : shared.regions) regions[name] = {std::lround(r.x0), std::lround(r.y0), std::lround(r.x1), std::lround(r.y1)};
  return regions;
}

void UiReport::noteInput() {
  const ImGuiIO& io = ImGui::GetIO();
  const bool over = ImGui::IsMousePosValid(&io.MousePos);
  const long x = over ? std::lround(io.MousePos.x) : -1, y = over ? std::lround(io.MousePos.y) : -1;
  if (x != mouseX_ || y != mouseY_) {
    mouseX_ = x;
    mouseY_ = y;
    mouseSince_ = frames_ + 1;  // maybeWrite counts this frame after it is drawn
    inputChanged_ = true;
  }
  for (int button = 0; button < 3; ++button) {
    if (!io.MouseClicked[button]) continue;
    ++presses_;
    pressFrame_ = frames_ + 1;
    pressX_ = x;
    pressY_ = y;
    inputChanged_ = true;
  }
}

void UiReport::maybeWrite(const App& app, float frameMs) {
  ++frames_;
  if (frameMs > kSlowFrameMs) {  // the frame just drawn, counted above
    slowFrames_.emplace_back(frames_, frameMs);
    if (slowFrames_.size() > kMaxSlowFrames) slowFrames_.pop_front();
    inputChanged_ = true;  // said at once
  }
  const auto now = std::chrono::steady_clock::now();
  // The second frame with the pointer at rest is what hands.hover waits for: say it at once.
  if (frames_ == mouseSince_ + 2) inputChanged_ = true;
  if (now - last_ < std::chrono::milliseconds(100) && !inputChanged_) return;
  last_ = now;
  inputChanged_ = false;
  const Snapshot* s = app.snapshot();
  const AppState& state = app.state();
  nlohmann::json cached = nlohmann::json::array();
  for (const DownloadedModel& model : app.cachedModels()) cached.push_back({{"id", model.id}, {"path", model.path}, {"problem", model.problem}});
  const FileBrowser& browser = app.browser();
  nlohmann::json browserEntries = nlohmann::json::array();
  for (const session::FileEntry& entry : browser.listing().entries) {
    if (browserEntries.size() == 200) break;  // enough for the tests; a report per frame stays small
    browserEntries.push_back({{"name", entry.name}, {"kind", session::fileKindName(entry.kind)}});
  }
  nlohmann::json report = {
      {"frame", frames_},
      {"uptime_ms", std::chrono::duration<double, std::milli>(now - start_).count()},
      {"frame_ms", frameMs},
      {"slow_frames", slowFrames_},
      {"panel", panelName(state.panel)},
      {"model", app.session().modelPath()},
      {"opening", app.opening()},
      {"opening_progress", app.openingProgress()},
      {"cached_models", cached},
      {"n_ctx", app.session().config().n_positions},
      {"prompt_bytes", state.prompt.size()},
      {"prompt", state.prompt},
      {"snapshot", s ? s->id : 0},
      {"tokens", s ? s->ids.size() : 0},
      {"dropped", s ? s->droppedIds.size() : 0},
      {"reused_tokens", s ? s->reusedTokens : 0},
      {"error", s ? s->error : ""},
      {"message", app.message()},
      {"messages_kept", app.messages().size()},
      {"display", {ImGui::GetIO().DisplaySize.x, ImGui::GetIO().DisplaySize.y}},
      {"message_kind", app.messageKind() == App::MessageKind::Info      ? "info"
                       : app.messageKind() == App::MessageKind::Warning ? "warning"
                                                                        : "error"},
      {"busy", app.session().busy()},
      {"n_layer", app.session().config().n_layer},
      {"n_head", app.session().config().n_head},
      {"layer", state.layer},
      {"head", state.head},
      {"average_heads", state.averageHeads},
      {"scores", state.showScores},
      {"grid", state.showGrid},
      {"lines", state.linesView},
      {"font_scale", state.fontScale},
      {"projector", state.projector},
      {"help", app.helpOpen()},
      {"token", state.token},
      {"interventions", state.interventions.size()},
      {"what_ifs", formatWhatIfs(state.whatIfs)},
      {"what_if_snapshot", s ? formatWhatIfs(s->request.whatIfs) : ""},  // what the snapshot on screen ran with
      {"shuffle_order", s ? s->shuffleOrder : std::vector<int>{}},
      // The forward's most likely next token (the id tscope-cli forward ranks first for the same input).
      {"next_top_id", s && !s->trace.logits.empty()
                          ? static_cast<int>(std::max_element(s->trace.logits.end() - app.session().config().vocab_size, s->trace.logits.end()) -
                                             (s->trace.logits.end() - app.session().config().vocab_size))
                          : -1},
      {"shown", app.shared().facts},
      {"export", {{"name", app.exportName()}, {"note", app.exportNote()}}},
      {"figures", app.figures()},
      {"file_browser",
       {{"open", browser.isOpen()},
        {"purpose", fileBrowserPurposeName(browser.purpose())},
        {"folder", browser.listing().folder},
        {"selected", browser.selected()},
        {"entries", browserEntries},
        {"problem", browser.problem()}}},
      {"recent_files", app.recentFiles()},
      {"held_layers", s ? s->trace.layers : std::vector<int>{}},
      {"maps_note", s ? s->trace.note : ""},
      {"regions", regionsJson(app.shared())},
      {"mouse",
       {{"x", mouseX_},
        {"y", mouseY_},
        {"since_frame", mouseSince_},
        {"presses", presses_},
        {"press_frame", pressFrame_},
        {"press_x", pressX_},
        {"press_y", pressY_}}},
  };
  try {
    writeFileAtomically(path_, report.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  } catch (const std::exception&) {
    // A test harness that removed its folder: nothing to report to.
  }
}

}  // namespace tscope::gui
