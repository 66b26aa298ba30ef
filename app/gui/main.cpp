// tscope: the desktop app. Parses the command line, loads the model, opens the window and runs
// the frame loop; --screenshot renders one panel headlessly and exits, --export-slides renders a
// lesson's steps, --bench-frames times frames while the model keeps recomputing. Errors are one line on stderr and a non-zero exit.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <imgui.h>

#include "app/common/args.h"
#include "app/gui/app.h"
#include "app/gui/headless.h"
#include "model/core/error.h"
#include "app/gui/platform.h"
#include "app/session/session_file.h"
#include "app/gui/ui_report.h"
#include "model/train/train_presets.h"

namespace {

struct Options {
  std::string model, prompt, source, session, screenshot, panel, trainPreset, backend = "auto", lesson, exportSlides, browse;
  int layer = -1, head = -1, benchFrames = 0, trainSteps = 0, lessonStep = -1;
  int width = 1600, height = 1000;  // the window (--window WxH; 1280x720 for --export-slides)
  float fontScale = 1.0f;
  bool projector = false, hasPrompt = false, hasSource = false, hasWindow = false, hasFontScale = false;
  bool fresh = false;  // start without the saved preferences (user_preferences.h)
};

const char* kUsage =
    "usage: tscope [--model DIR] [--prompt S] [--source S] [--session FILE] [--font-scale X] [--projector] [--window WxH] [--fresh]\n"
    "              (the window opens as it closed: size, place, text size, projector mode, model, prompt and panel,\n"
    "               kept in $XDG_CONFIG_HOME/tscope/preferences.json; --fresh starts from the defaults instead)\n"
    "              (--source: an encoder-decoder's source text; its prompt is then the target so far)\n"
    "              [--backend auto|cpu|cuda|reference]  (auto, the default: the GPU when a CUDA device is usable, else the CPU;\n"
    "                                                      reference: the plain-loop backend the tests check against)\n"
    "              [--screenshot FILE.png --panel NAME [--layer l --head h]] [--bench-frames N]\n"
    "              [--browse model|session|lesson]  (open the file browser for that at start)\n"
    "              [--train-preset KEY [--train-steps N]]  (start a training preset, pause after N steps;\n"
    "                                                      --layer/--head then pick the Training panel's head)\n"
    "              [--lesson NAME|FILE.json [--step N] [--export-slides DIR]]  (present a lesson from step N (1-based);\n"
    "                                                      --export-slides renders every step to DIR/step-01.png ... and\n"
    "                                                      DIR/index.html, then exits)\n";

// The usage, with the panels and training presets as registered (panel_list.h, train_presets.cpp).
std::string usage() {
  std::string presets;
  for (const tscope::TrainPreset& preset : tscope::trainPresets()) presets += (presets.empty() ? "" : " ") + preset.key;
  return std::string(kUsage) + "panels: " + tscope::gui::panelNames() + "\ntraining presets: " + presets + "\n";
}

Options parse(int argc, char** argv) {
  std::vector<std::string> argvList(argv + 1, argv + argc);
  for (const std::string& arg : argvList)
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      std::exit(0);
    }
  // The same parser and one-line errors as tscope-cli (app/common/args.h).
  const tscope::Args args("tscope", argvList,
                          {"model", "prompt", "source", "session", "backend", "screenshot", "panel", "layer", "head", "bench-frames", "train-preset",
                           "train-steps", "lesson", "step", "export-slides", "font-scale", "window", "browse"},
                          {"projector", "fresh"});
  Options o;
  o.model = args.str("model", "");
  o.hasPrompt = args.has("prompt");
  o.prompt = args.str("prompt", "");
  o.hasSource = args.has("source");
  o.source = args.str("source", "");
  o.session = args.str("session", "");
  o.backend = args.str("backend", "auto");
  if (o.backend != "auto" && o.backend != "cpu" && o.backend != "cuda" && o.backend != "reference")
    throw tscope::UsageError("--backend must be auto, cpu, cuda or reference (got '" + o.backend + "')");
  o.screenshot = args.str("screenshot", "");
  o.panel = args.str("panel", "");
  o.layer = static_cast<int>(args.integer("layer", -1, 0, 1 << 20));
  o.head = static_cast<int>(args.integer("head", -1, 0, 1 << 20));
  o.benchFrames = static_cast<int>(args.integer("bench-frames", 0, 0, 1 << 20));
  o.trainPreset = args.str("train-preset", "");
  o.trainSteps = static_cast<int>(args.integer("train-steps", 0, 1, 100000000));
  o.lesson = args.str("lesson", "");
  o.lessonStep = static_cast<int>(args.integer("step", -1, 1, 100000));
  o.exportSlides = args.str("export-slides", "");
  o.fontScale = static_cast<float>(args.number("font-scale", 1.0, 0.5, 4.0));
  o.hasFontScale = args.has("font-scale");
  o.projector = args.has("projector");
  o.fresh = args.has("fresh");
  o.browse = args.str("browse", "");
  if (!o.browse.empty() && o.browse != "model" && o.browse != "session" && o.browse != "lesson")
    throw tscope::UsageError("--browse must be model, session or lesson (got '" + o.browse + "')");
  if (args.has("window")) {
    const std::string v = args.str("window");
    char rest = 0;
    if (std::sscanf(v.c_str(), "%dx%d%c", &o.width, &o.height, &rest) != 2 || o.width < 320 || o.height < 240 || o.width > 16384 || o.height > 16384)
      throw tscope::UsageError("--window must be WIDTHxHEIGHT, at least 320x240 (got '" + v + "')");
    o.hasWindow = true;
  }
  if ((o.lessonStep > 0 || !o.exportSlides.empty()) && o.lesson.empty()) throw tscope::UsageError("--step and --export-slides need --lesson");
  if (!o.exportSlides.empty() && !o.hasWindow) o.width = 1280, o.height = 720;
  return o;
}

// The shipped default model, else the small random model scripts/run.sh creates.
std::string defaultModel() {
  const std::filesystem::path root(TSCOPE_SOURCE_DIR);
  for (const auto& candidate : {root / "assets/models/brown-small", root / ".cache/models/random-gpt2-tiny"})
    if (std::filesystem::exists(candidate / "config.json")) return candidate.string();
  return "";
}

// The saved preferences under what the command line and a session file say: the text size,
// projector mode and map memory; the last model (if it is still there) with its prompt; the panel.
void restorePreferences(const tscope::session::UserPreferences& saved, const Options& options, tscope::session::AppState& state, std::string& model) {
  static_cast<tscope::session::Preferences&>(state) = saved.preferences;
  std::error_code ec;
  if (model.empty() && !saved.model.empty() && std::filesystem::exists(saved.model, ec)) model = saved.model;
  if (model == saved.model && !options.hasPrompt) state.prompt = saved.prompt;
}

// The frame loop of the interactive window, until it is closed or Ctrl Q.
void runWindow(tscope::gui::Platform& platform, tscope::gui::App& app);

int run(const Options& options) {
  using namespace tscope::gui;
  AppState state;
  std::string model = options.model, startupMessage;
  // Warning: something was set aside and the window started anyway (a corrupt preferences file, a
  // session's left-out fields, the last model gone); Error: the session asked for did not load.
  App::MessageKind startupKind = App::MessageKind::Warning;
  // The preferences file belongs to the interactive window: captures and benchmarks start from the defaults.
  const bool interactive = options.screenshot.empty() && options.exportSlides.empty() && options.benchFrames == 0;
  const std::string preferencesPath = interactive ? userPreferencesPath() : "";
  std::optional<UserPreferences> saved;
  if (!options.fresh) saved = loadUserPreferences(preferencesPath, startupMessage);
  if (saved && options.session.empty()) restorePreferences(*saved, options, state, model);
  if (!options.session.empty()) {
    try {
      SessionFile file = loadSessionFile(options.session);
      state = file.state;
      startupMessage = file.warning;
      if (model.empty()) model = file.modelPath;
    } catch (const tscope::Error& e) {
      startupMessage = e.what();  // shown in the app; we carry on with the defaults
      startupKind = App::MessageKind::Error;
    }
  }
  if (model.empty()) model = defaultModel();
  if (model.empty()) throw tscope::Error("no model: pass --model DIR (or run scripts/run.sh once to create the default model)");
  if (options.hasPrompt) state.prompt = options.prompt;
  if (options.hasSource) state.source = options.source;
  state.fontScale = options.hasFontScale ? options.fontScale : state.fontScale;
  state.projector = options.projector || state.projector;
  tscope::LoadedModel loaded;
  try {
    loaded = tscope::loadModel(model);
  } catch (const tscope::Error& e) {
    // The model last open (the preferences file's) no longer loads: the default one opens, and a line says why.
    if (!saved || model != saved->model || options.model == model || defaultModel().empty()) throw;
    startupMessage = std::string(e.what()) + " (the model last open; opened the default model)";
    model = defaultModel();
    state.prompt = AppState{}.prompt;
    loaded = tscope::loadModel(model);
  }
  const tscope::ModelConfig config = loaded.weights.config();
  // An encoder-decoder's prompt is its target: it starts empty (the default prompt is English text).
  if (config.isEncoderDecoder() && !options.hasPrompt && options.session.empty()) state.prompt.clear();
  // Route as the model was built to unless a session file says otherwise (the Experts panel can switch).
  if (options.session.empty()) state.moeExpertChoice = config.moe_routing == tscope::MoeRoutingKind::ExpertChoice;
  // With --train-preset, --layer and --head choose the head the Training panel shows large.
  const bool explorerHead = options.trainPreset.empty();
  if (explorerHead && options.layer >= config.n_layer)
    throw tscope::Error("--layer " + std::to_string(options.layer) + " is past the model's " + std::to_string(config.n_layer) + " layers");
  if (explorerHead && options.head >= config.n_head)
    throw tscope::Error("--head " + std::to_string(options.head) + " is past the model's " + std::to_string(config.n_head) + " heads");
  if (explorerHead && options.layer >= 0) state.layer = options.layer;
  if (explorerHead && options.head >= 0) state.head = options.head;
  state.layer = std::min(state.layer, config.n_layer - 1);
  state.head = std::min(state.head, config.n_head - 1);

  PlatformOptions platformOptions;
  platformOptions.fontScale = state.fontScale;
  platformOptions.projector = state.projector;
  platformOptions.width = options.width;
  platformOptions.height = options.height;
  platformOptions.fitToScreen = interactive && !options.hasWindow;
  if (saved) platformOptions.place = saved->window;
  Platform platform(platformOptions);
  auto session = std::make_unique<Session>(std::move(loaded), options.backend);
  // The CPU fallback is said once on stderr too (the status bar keeps saying it).
  if (options.backend == "auto" && session->backendName() != "cuda")
    std::fprintf(stderr, "tscope: running on the %s\n", session->backendDescription().c_str());
  App app(std::move(session), state);
  if (saved) app.setRecentFiles(saved->recentFiles);
  if (!startupMessage.empty()) app.showMessage(startupMessage, startupKind);
  if (!options.panel.empty() && !app.selectPanel(options.panel)) throw tscope::Error("unknown panel '" + options.panel + "' (try --help)");
  if (options.panel.empty() && options.session.empty() && saved && saved->panel) app.selectPanel(*saved->panel);
  if (!options.browse.empty())
    app.openBrowser(options.browse == "model"     ? FileBrowser::Purpose::Model
                    : options.browse == "session" ? FileBrowser::Purpose::Session
                                                  : FileBrowser::Purpose::Lesson);
  if (options.trainSteps > 0 && options.trainPreset.empty()) throw tscope::Error("--train-steps needs --train-preset");
  if (!options.trainPreset.empty()) {
    if (!app.startTraining(options.trainPreset, options.trainSteps, options.layer, options.head))
      throw tscope::Error("unknown training preset '" + options.trainPreset + "' (try --help)");
    if (options.panel.empty()) app.selectPanel(PanelId::Training);
  }

  if (!options.lesson.empty()) {
    std::string error;
    if (!app.lessons().start(options.lesson, std::max(0, options.lessonStep - 1), &error)) {
      if (!options.exportSlides.empty()) throw tscope::Error(error);
      app.showMessage(error);  // the app opens without the lesson and says why
    }
  }
  if (!options.exportSlides.empty()) {
    exportSlides(platform, app, options.exportSlides);
    std::printf("{\"slides\": \"%s\", \"steps\": %zu}\n", options.exportSlides.c_str(), app.lessons().lesson()->steps.size());
    return 0;
  }
  using Clock = std::chrono::steady_clock;
  float lastFrameMs = 0;
  if (!options.screenshot.empty()) {
    // Render until the first result is on screen (and textures are built), and a training run
    // asked for on the command line has paused or finished, then capture.
    const bool training = !options.trainPreset.empty();
    renderSettled(
        platform, app, [&] { return app.trainingSettled(); }, training ? 600 : 120, training ? "training run" : "model");
    platform.saveScreenshot(options.screenshot);
    // Where things are on screen, for the GUI tests: {"regions": {"panel": [x0, y0, x1, y1], ...}}.
    std::printf("{\"screenshot\": \"%s\", \"panel\": \"%s\", \"regions\": %s}\n", options.screenshot.c_str(), options.panel.c_str(),
                regionsJson(app.shared()).dump().c_str());
    return 0;
  }
  if (options.benchFrames > 0) {
    // Keep the model busy (a new prompt every few frames) and time each frame's CPU work.
    platform.setSwapInterval(0);
    std::vector<double> frameMs;
    const std::string base = app.state().prompt;
    for (int frame = 0; frame < options.benchFrames; ++frame) {
      if (frame % 4 == 0) {
        app.state().prompt = base + std::string(frame / 4 % 2 ? " again" : "");
        app.state().layer = frame % config.n_layer;
      }
      const auto t0 = Clock::now();
      platform.beginFrame();
      if (frame % 4 == 0) app.requestRecompute();
      app.frame(lastFrameMs);
      platform.renderOnly();
      platform.finish();
      lastFrameMs = std::chrono::duration<float, std::milli>(Clock::now() - t0).count();
      frameMs.push_back(lastFrameMs);
      platform.endFrame();
    }
    std::sort(frameMs.begin(), frameMs.end());
    std::printf("{\"frames\": %d, \"median_frame_ms\": %.3f, \"p90_frame_ms\": %.3f, \"model_requests\": %llu}\n", options.benchFrames,
                frameMs[frameMs.size() / 2], frameMs[frameMs.size() * 9 / 10], (unsigned long long)app.session().postedCount());
    return 0;
  }
  runWindow(platform, app);
  if (!preferencesPath.empty()) {
    UserPreferences now{app.state(), platform.windowPlace(), app.session().modelPath(), app.state().prompt, app.state().panel, app.recentFiles()};
    try {
      saveUserPreferences(preferencesPath, now);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tscope: the preferences were not saved: %s\n", e.what());
    }
  }
  return 0;
}

void runWindow(tscope::gui::Platform& platform, tscope::gui::App& app) {
  using namespace tscope::gui;
  using Clock = std::chrono::steady_clock;
  float lastFrameMs = 0;
  // TSCOPE_UI_REPORT=FILE: the GUI tests' view of the live window (ui_report.h).
  std::optional<UiReport> report;
  if (const char* path = std::getenv("TSCOPE_UI_REPORT"); path && *path) report.emplace(path);
  int activeFrames = 0;  // frames still to draw after the last input before sleeping until the next
  while (!platform.shouldClose() && !app.wantsQuit()) {
    // The font atlas may be rebuilt only outside a frame (ImGui asserts between NewFrame and
    // Render), so a style change made during one frame (P, Ctrl +/-, the toolbar) applies here.
    platform.applyStyle(app.state().fontScale, app.state().projector);
    // Idle (nothing computing, no recent input): sleep until input, waking every 100 ms (20 ms
    // while a text cursor blinks), so a laptop on battery is not kept busy by an unchanging screen.
    const ImGuiIO& io = ImGui::GetIO();
    const bool active =
        app.needsFrames() || io.MouseDelta.x != 0 || io.MouseDelta.y != 0 || ImGui::IsAnyMouseDown() || io.InputQueueCharacters.Size > 0;
    activeFrames = active ? 6 : std::max(0, activeFrames - 1);
    if (activeFrames == 0) platform.waitForEvents(io.WantTextInput ? 0.02 : 0.1);
    const auto t0 = Clock::now();  // the frame's own time, without the wait
    platform.beginFrame();
    if (report) report->noteInput();
    app.frame(lastFrameMs);
    platform.renderOnly();
    std::string exportPath;
    ScreenRect crop;
    if (app.takeScreenshotRequest(exportPath, crop)) {
      try {
        platform.saveScreenshot(exportPath, crop.x0, crop.y0, crop.x1, crop.y1);
        app.screenshotDone(exportPath, "");
      } catch (const std::exception& e) {
        app.screenshotDone(exportPath, e.what());
      }
    }
    platform.swap();
    lastFrameMs = std::chrono::duration<float, std::milli>(Clock::now() - t0).count();
    // Without vsync (a virtual display, some drivers) cap the rate at about 120 frames a second.
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(8));
    if (report) report->maybeWrite(app, lastFrameMs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::string line = e.what();
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::cerr << "tscope: " << line << "\n";
    return 1;
  }
}
