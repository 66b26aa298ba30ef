// Writes the GUI tests' report of the live window (see ui_report.h).
#include "app/gui/ui_report.h"

#include "app/gui/app.h"
#include "model/io/npy.h"

namespace tscope::gui {

nlohmann::json regionsJson(const SharedView& shared) {
  nlohmann::json regions = nlohmann::json::object();
  for (const auto& [name, r] : shared.regions) regions[name] = {std::lround(r.x0), std::lround(r.y0), std::lround(r.x1), std::lround(r.y1)};
  return regions;
}

void UiReport::maybeWrite(const App& app, float frameMs) {
  ++frames_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const Snapshot* s = app.snapshot();
  const AppState& state = app.state();
  nlohmann::json report = {
      {"frame", frames_},
      {"uptime_ms", std::chrono::duration<double, std::milli>(now - start_).count()},
      {"frame_ms", frameMs},
      {"panel", panelName(state.panel)},
      {"model", app.session().modelPath()},
      {"n_ctx", app.session().config().n_positions},
      {"prompt_bytes", state.prompt.size()},
      {"prompt", state.prompt},
      {"snapshot", s ? s->id : 0},
      {"tokens", s ? s->ids.size() : 0},
      {"dropped", s ? s->droppedIds.size() : 0},
      {"error", s ? s->error : ""},
      {"message", app.message()},
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
      {"shown", app.shared().facts},
      {"regions", regionsJson(app.shared())},
  };
  try {
    writeFileAtomically(path_, report.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  } catch (const std::exception&) {
    // A test harness that removed its folder: nothing to report to.
  }
}

}  // namespace tscope::gui
