// Everything the panels share: the per-session view state (what the user chose), the per-panel
// view caches (textures built from the latest snapshot), and one draw function per panel.
// Each panel follows ImGui's demo idiom: a function drawing into the current tab.
#pragma once
#include <imgui.h>

#include <map>
#include <string>
#include <vector>

#include "app/session/app_state.h"
#include "app/gui/widgets/heatmap.h"
#include "app/gui/panels/lab_views.h"
#include "model/generate/sampling.h"
#include "model/theory/scaling.h"
#include "app/session/session.h"
#include "app/session/training_session.h"

namespace tscope::gui {

// Textures and caches built from snapshots (never saved).
struct AttentionView {
  uint64_t builtFor = 0;
  int layer = -1, head = -1;
  bool average = false, scores = false;
  Heatmap main;
  ColorScale scale;
  float lo = 0, hi = 1;             // colour range of `main`
  std::vector<Heatmap> thumbnails;  // (L * H) when the grid is shown
  bool thumbnailsBuilt = false;
};

// A rectangle on screen in framebuffer pixels (x0, y0, x1, y1), recorded for headless tests.
struct ScreenRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// The matrix a panel shows, offered to File > Export CSV / NPY.
struct ExportableMatrix {
  std::string name;          // e.g. "attention_l0_h3"
  std::vector<float> values; // (rows, cols) row-major
  int rows = 0, cols = 0;
};

// Next-token panel: Step / Generate N (run by the session: session_generate.cpp), what the last one
// drew, and the top tokens of the snapshot on screen.
struct SamplingView {
  uint64_t builtFor = 0;
  std::vector<int> topIds;          // most probable tokens by raw probability, best first
  std::vector<int> keptCounts;      // (4) tokens with non-zero probability at each stage
  int generateCount = 16;           // N for Generate
  bool awaitingGeneration = false;  // a Step / Generate was posted and the session is still on it
  uint64_t takenGeneration = 0;     // the snapshot whose generated text the prompt took
  int lastToken = -1;               // the newest token drawn and its probability when drawn (NaN: unknown)
  float lastTokenProb = 0;
  bool lastWasGreedy = false;
  int streamTokens = 0;             // tokens drawn so far in that random stream
  uint64_t streamSeed = 0;
  std::string lastStop;             // why the last generation made fewer tokens than asked
  bool sharedScale = true;          // one probability scale for every stage
};

// Residual panel: the residual-norm heatmap (L + 1, T) and its colour range.
struct ResidualView {
  uint64_t builtFor = 0;
  Heatmap norms;
  float lo = 0, hi = 1;
  int scrolledTo = -1;              // the lens table was last scrolled to show this position
};

// Scaling-laws panel: the constants the lecturer edits, the compute budget and the worked example.
struct ScalingView {
  KaplanConstants kaplan;
  ChinchillaConstants chinchilla;  // starts as Hoffmann et al.'s published fit
  int chinchillaPreset = 0;        // 0 published (Hoffmann 2022), 1 refit (Besiroglu 2024), 2 edited
  double computeFlops = 5.88e23;   // the budget slider (Chinchilla's own, 6 x 70B x 1.4T)
  double exampleLoss = 2.1, exampleParams = 175e9, exampleNewParams = 500e9;
  int kaplanPlot = 0;              // which Kaplan law is shown when there is room for one plot only
};

// Training panel: the run being edited (a preset, then the user's edits), where the timeline is,
// and the textures of the snapshot on screen (rebuilt when the snapshot, layer or head change).
struct TrainingPanelView {
  bool initialized = false;
  int preset = 0;                 // index into trainPresets()
  TrainConfig config;             // the preset's config with the user's edits
  DataSpec data;
  std::string problem;            // validateTrainSetup(config, data); "" when it can start
  std::string saveDir;            // where Save model writes
  bool saveDirEdited = false;     // typed by the user (else it follows the preset)
  uint64_t savesRequested = 0;    // save() calls made; the session counts the ones finished
  uint64_t openAfterSave = 0;     // open the model in the explorer once this save is done (0: none)
  int snapshot = -1;              // index into the timeline
  bool followLatest = true;
  int layer = 1, head = 0;        // the head shown large (layer 1: where induction heads live)
  std::shared_ptr<const TrainingSnapshot> builtFor;  // what the textures show
  int builtLayer = -1, builtHead = -1;
  Heatmap attention;
  std::vector<Heatmap> thumbnails;  // (L * H) every head of the snapshot
  ColorScale scale;
};

struct PanelViews {
  std::map<std::string, ScreenRect> regions;  // named screen regions of this frame (heatmaps, plots)
  ExportableMatrix exportable;                // set by the panel on screen, each frame
  float tokenStripHeight = 0;                 // height the token strip's contents took last frame
  uint64_t tokenStripScrolledFor = 0;         // the snapshot the strip last scrolled to the end for
  AttentionView attention;
  std::map<std::string, Heatmap> heatmaps;  // other panels' heatmaps by name
  std::map<std::string, uint64_t> builtFor; // snapshot id each was built from
  SamplingView sampling;
  ResidualView residual;
  LabViews lab;  // Positional, Architecture and Experts panels (lab_views.h)
  ScalingView scaling;
  TrainingPanelView training;
};

// Records the widget just drawn as a named screen region (the GUI tests find and click it there).
inline void recordItem(PanelViews& views, const std::string& name) {
  const ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  views.regions[name] = {min.x, min.y, max.x, max.y};
}

struct PanelContext {
  Session& session;
  AppState& state;
  const Snapshot* snapshot;   // null until the first result
  HeatmapRenderer& renderer;
  PanelViews& views;
  bool repost = false;        // set by a panel when a knob that needs the model changed
  std::string message;        // set by a panel to show one line in the status bar
  TrainingSession* training = nullptr;  // the app's training run
  std::string openModel;      // set by a panel: load this model directory into the explorer
  std::string openPrompt;     // with this prompt (one the new model's tokenizer and context fit)
  int generateTokens = 0;     // set with repost by the Next-token panel: generate this many tokens first
};

void drawPromptStrip(PanelContext& ctx);
void drawPromptPanel(PanelContext& ctx);
void drawAttentionPanel(PanelContext& ctx);
void drawResidualPanel(PanelContext& ctx);
void drawSamplingPanel(PanelContext& ctx);
// When `s` holds a finished Step / Generate for the prompt on screen: the prompt takes the new
// text and its generated ids (once per snapshot). Returns the line for the status bar ("" none).
std::string takeGeneratedText(AppState& state, SamplingView& view, const Snapshot& s);
void drawPositionalPanel(PanelContext& ctx);
void drawMoePanel(PanelContext& ctx);
void drawArchitecturePanel(PanelContext& ctx);
void drawScalingPanel(PanelContext& ctx);
void drawTrainingPanel(PanelContext& ctx);
// Selects the preset (key or name) in the Training panel and starts it, pausing once pauseAtStep
// steps are done (0: runs to the end). False for an unknown preset.
bool startTrainingPreset(PanelViews& views, TrainingSession& training, const std::string& preset, int pauseAtStep);

}  // namespace tscope::gui
