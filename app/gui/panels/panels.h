// The panel interface: each tab is a small class (panel_*.h) that owns its view state and texture
// caches and draws itself (ImHex's View idiom). What panels genuinely share lives in SharedView
// (this frame's named screen regions and the matrix offered to File > Export) and in AppState.
#pragma once
#include <imgui.h>

#include <functional>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "app/common/svg_figure.h"
#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/figure_sink.h"
#include "app/gui/widgets/heatmap.h"
#include "app/session/app_state.h"
#include "app/session/session.h"
#include "app/session/tasks.h"
#include "app/session/sweep_session.h"
#include "app/session/training_session.h"
#include "app/gui/session_names.h"

namespace tscope::gui {

// A rectangle on screen in framebuffer pixels (x0, y0, x1, y1), recorded for headless tests.
struct ScreenRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// The matrix a panel shows, offered to the toolbar's Export CSV / NPY. Set by the panel on every
// frame it draws it; a frame that sets none leaves nothing to export (the buttons say why).
struct ExportableMatrix {
  std::string name;              // e.g. "attention_l0_h3"; a layout of more than two axes is named in it
  std::vector<float> values;     // (rows, cols) row-major, or `shape`
  int rows = 0, cols = 0;        // the CSV's rows and columns (more than two axes: the leading ones fold into the rows)
  std::vector<int64_t> shape{};  // the NPY's shape when not (rows, cols)
  // Large arrays (every head of the grid): built when exported instead of every frame.
  std::function<std::vector<float>()> make{};
  bool any() const { return !values.empty() || static_cast<bool>(make); }
};

// What the panels of one frame leave for the App: cleared at the start of every frame.
struct SharedView {
  std::map<std::string, ScreenRect> regions;        // named screen regions (tabs, heatmaps, plots) for ui_report
  ExportableMatrix exportable;                      // set by the panel on screen
  std::string exportNote;                           // why nothing on screen can be exported ("": the default line)
  nlohmann::json facts = nlohmann::json::object();  // what the panel on screen shows, for ui_report ("shown")
  // The vector figures the panel on screen drew this frame (figure_sink.h: every plot, column chart
  // and TokenHeatmap with a region), for Export SVG.
  std::vector<VectorFigure> figures;
};

// Records the widget just drawn as a named screen region (the GUI tests find and click it there).
inline void recordItem(SharedView& shared, const std::string& name) {
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  shared.regions[name] = {min.x, min.y, max.x, max.y};
}

// The last row of a (rows, V) logits array, or empty.
inline std::span<const float> lastRow(const std::vector<float>& logits, int V) {
  if (V <= 0 || logits.size() < (size_t)V) return {};
  return std::span<const float>(logits).subspan(logits.size() - V, V);
}

// A token id as chart text (quoted, cut to 16 characters; the id itself without a tokenizer). The
// pointer is valid until the next call: ImGui copies it at once.
inline const char* tokenText(const Session& session, int id) {
  static thread_local std::string text;
  text = session.tokenizer() ? tokenLabel(session.tokenizer()->tokenText(id), 16) : std::to_string(id);
  return text.c_str();
}

// What a panel draws from and what it asks of the App this frame.
struct PanelContext {
  Session& session;
  AppState& state;           // the selected layer / head / token and every knob (saved in session files)
  const Snapshot* snapshot;  // null until the first result
  HeatmapRenderer& renderer;
  SharedView& shared;
  Tasks& tasks;                         // the app's background work that is not a forward (app/session/tasks.h)
  TrainingSession* training = nullptr;  // the app's training run
  SweepSession* sweeps = nullptr;       // the app's scaling sweep (the Scaling panel's Your runs)
  std::string screenshotOutcome{};      // the last screenshot written: "saved PATH" or why not ("" none yet)
  std::string screenshotPath{};         // set by a panel: write this part of the window as PNG after the frame
  ScreenRect screenshotCrop{};          // with screenshotPath: the part (window pixels)
  bool repost = false;                  // set by a panel when a knob that needs the model changed
  std::string message{};                // set by a panel to show one line in the status bar
  std::string openModel{};              // set by a panel: load this model directory into the explorer
  bool browseImage = false;             // set by a panel: open the file browser for a picture
  std::string chosenImage{};            // set by the App: the picture that browser chose ("" none this frame)
  std::string openPrompt{};             // with this prompt (one the new model's tokenizer and context fit)
  int generateTokens = 0;               // set with repost by the Next-token panel: generate this many tokens first
  std::string selectTab{};              // set by the App: open this sub-tab of the panel (by its region name), "" none
};

// A sub-tab's BeginTabItem flags: selected when the App asks for it (PanelContext::selectTab).
inline ImGuiTabItemFlags subTabFlags(const PanelContext& ctx, const char* region) {
  return ctx.selectTab == region ? ImGuiTabItemFlags_SetSelected : 0;
}

// The colour of everything that says interventions are active (Inside the block's toggles, the status bar).
inline const ImVec4 kInterventionColor{1.0f, 0.55f, 0.1f, 1.0f};
// "2 interventions active: zero 1.0,1.3; mean 0.mlp" ("" when none).
std::string interventionsLine(const AppState& state);

// What a lesson step or the command line asks of the panels; each takes what it knows.
struct PanelCommand {
  const ModelConfig* architecture = nullptr;  // the Architecture panel's edited design
  std::optional<int> expert;                  // the Experts panel's selected expert (-1: none)
  std::string trainPreset;                    // the Training panel starts this preset...
  int trainSteps = 0;                         // ...pausing after this many steps (0: runs on)
  int layer = -1, head = -1;                  // ...showing this layer and head large (-1: its default)
};

// One tab of the main window, registered once in app/session/panel_list.h. A panel's state lives
// as long as the panel: the App makes new panels (fresh caches) when it opens another model.
class Panel {
 public:
  virtual ~Panel() = default;
  virtual void draw(PanelContext& ctx) = 0;
  // A new snapshot is on screen: the panel may take from it into the state (the Next-token
  // panel's generated text); returns a line for the status bar, or "".
  virtual std::string onSnapshot(AppState&, const Snapshot&) { return {}; }
  // True when this panel took (part of) the command.
  virtual bool handle(const PanelCommand&, TrainingSession&) { return false; }
  // True while the panel's own background work (the Compare panel's second model) is not done: a
  // screenshot or a slide waits for it.
  virtual bool busy() const { return false; }
};

}  // namespace tscope::gui
