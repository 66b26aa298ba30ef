// The main window: prompt strip, panel tabs, status bar, help overlay and keyboard shortcuts.
// Knob changes post a new Request; the newest Snapshot is picked up at the start of each frame.
#include "app/gui/app.h"

#include <imgui.h>

#include <imgui_stdlib.h>

#include <algorithm>
#include <limits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iterator>

#include <filesystem>

#include "app/gui/panels/registry.h"
#include "app/gui/widgets/layout.h"
#include "model/io/npy.h"
#include "app/session/session_file.h"
#include "app/session/vision_input.h"

#include "app/gui/platform.h"

namespace tscope::gui {

App::App(std::unique_ptr<Session> session, AppState state)
    : session_(std::move(session)),
      training_(std::make_unique<TrainingSession>()),
      sweeps_(std::make_unique<SweepSession>()),
      state_(std::move(state)) {
  // The models shipped in assets/models, offered by the model picker.
  shippedModels_ = session::modelFolders(TSCOPE_SOURCE_DIR "/assets/models");
  cachedModels_ = findDownloadedModels();  // models downloaded with the HuggingFace tools or Ollama
  modelPathInput_ = session_->modelPath();
  showMessage(keepFittingInterventions(state_.interventions, session_->config()), MessageKind::Warning);  // a session file's, for another model
  if (std::string dropped = keepFittingWhatIfs(state_.whatIfs, session_->config()); !dropped.empty()) showMessage(dropped, MessageKind::Warning);
  for (const std::string& problem : lesson_.problems())  // broken lesson files
    showMessage(message_ + (message_.empty() ? "" : "\n") + problem, MessageKind::Error);
  for (const PanelInfo& panel : panelCatalog())  // a registration's mistake shows in the first test that opens the app
    if (!shortcutKey(panel.shortcut)) throw Error(std::string("panel ") + panel.name + ": no key for its shortcut Alt " + panel.shortcut);
  makeModelPanels();
  fitImageInput(false);
  selectPanel(state_.panel);  // a session file's panel opens first
  post();
}

void App::fitImageInput(bool openVision) {
  const ModelConfig& c = session_->config();
  if (!c.isImage()) {  // a text model reads no picture
    state_.image.clear();
    state_.maskedPatches.clear();
    state_.digit = -1;
    return;
  }
  if (state_.image.size() != (size_t)c.imageFloats()) {
    state_.digit = c.image_size == session::DigitCanvas::kSide && c.num_channels == 1 && session::digitTestImages() > 0 ? 0 : -1;
    state_.image = session::defaultImage(c, session_->preprocessing(), std::max(0, state_.digit));
    state_.maskedPatches.clear();
    state_.token = 0;  // [CLS]: the row the classes are read from (Inside the block's query, the attribution)
  }
  if (openVision) state_.panel = PanelId::Vision;
}

void App::makeModelPanels() {
  panels_.resize(panelCatalog().size());
  for (const PanelInfo& info : panelCatalog()) {
    std::unique_ptr<Panel>& panel = panels_[static_cast<size_t>(info.id)];
    if (!panel || !info.has(kOwnRun)) panel = makePanel(info.id);
  }
  tokenStrip_ = TokenStrip{};
}

bool App::sendCommand(const PanelCommand& command) {
  bool taken = false;
  for (auto& panel : panels_) taken = panel->handle(command, *training_) || taken;
  return taken;
}

bool App::selectPanel(const std::string& name) {
  const std::optional<PanelId> id = panelFromName(name);
  if (id) selectPanel(*id);
  return id.has_value();
}

void App::selectPanel(PanelId id) {
  if (panelInfo(id).has(kMoeModelsOnly) && !session_->config().isMoe()) return;
  state_.panel = id;
  requestedTab_ = static_cast<int>(id);
}

bool App::needsFrames() const {
  const TrainingStatus training = training_->latest()->status;
  return session_->busy() || tasks_.busy() || snapshot_ != session_->latest() || !pendingOpen_.first.empty() || requestedTab_ >= 0 ||
         !requestedSubTab_.empty() || !lesson_.settled() || training == TrainingStatus::Preparing || training == TrainingStatus::Running ||
         sweeps_->latest()->status == SweepState::Running;
}

bool App::upToDate() const {
  const Panel* shown = panels_.empty() ? nullptr : panels_[static_cast<size_t>(state_.panel)].get();
  return snapshot_ && !session_->busy() && snapshot_ == session_->latest() && !tasks_.busy() && !(shown && shown->busy());
}

void App::post(int generateTokens) {
  Request request = requestFor(state_, session_->config());
  request.generateTokens = generateTokens;
  postedNeeds_ = request;
  session_->post(std::move(request));
}

// Every panel shows the ablated model; only the panel on screen that needs them pays for the
// components and one layer's internals, or for the efficient-attention variant's run. The focus
// layer and the map memory are posted with the next request (or when the maps are missing).
bool App::needsChanged() const {
  ViewNeeds wanted = panelNeeds(state_, session_->config());
  wanted.focusLayer = postedNeeds_.focusLayer;
  wanted.mapMemoryBytes = postedNeeds_.mapMemoryBytes;
  return !(wanted == postedNeeds_);
}

void App::handleShortcuts() {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || browser_.isOpen()) return;  // typing in the prompt; the file browser takes the keys
  const ModelConfig& c = session_->config();
  if (!pendingOpen_.first.empty() && isShortcutPressed(Key::Escape)) {  // before the lesson's Escape
    cancelOpen();
    return;
  }
  const bool lesson = lesson_.handleKeys();  // a lesson's keys override the head keys
  if (!lesson && isShortcutPressed(Key::Right)) state_.head = (state_.head + 1) % c.n_head;
  if (!lesson && isShortcutPressed(Key::Left)) state_.head = (state_.head + c.n_head - 1) % c.n_head;
  if (panelInfo(state_.panel).has(kStepsQueryRow)) {
    // Panels about one query row step the query token (-1, the last one, counts as the last position).
    const int tokens = snapshot_ ? static_cast<int>(snapshot_->ids.size()) : 0;
    const int token = state_.token < 0 ? tokens - 1 : state_.token;
    if (tokens > 0 && isShortcutPressed(Key::Down)) state_.token = std::min(tokens - 1, token + 1);
    if (tokens > 0 && isShortcutPressed(Key::Up)) state_.token = std::max(0, token - 1);
  } else {
    if (isShortcutPressed(Key::Down)) state_.layer = (state_.layer + 1) % c.n_layer;
    if (isShortcutPressed(Key::Up)) state_.layer = (state_.layer + c.n_layer - 1) % c.n_layer;
  }
  if (isShortcutPressed(Key::F1) || isShortcutPressed(Key::Slash, kShift)) showHelp_ = !showHelp_;
  if (isShortcutPressed(Key::A)) state_.averageHeads = !state_.averageHeads;
  if (isShortcutPressed(Key::S)) state_.showScores = !state_.showScores;
  if (isShortcutPressed(Key::G)) state_.showGrid = !state_.showGrid;
  if (isShortcutPressed(Key::L)) state_.linesView = !state_.linesView;
  if (isShortcutPressed(Key::P)) state_.projector = !state_.projector;
  // Ctrl + is Ctrl = on most layouts, Ctrl Shift = on some.
  if (isShortcutPressed(Key::Equal, kCtrl) || isShortcutPressed(Key::Equal, kCtrl | kShift))
    state_.fontScale = std::min(3.0f, state_.fontScale + 0.25f);
  if (isShortcutPressed(Key::Minus, kCtrl)) state_.fontScale = std::max(0.75f, state_.fontScale - 0.25f);
  for (const PanelInfo& panel : panelCatalog())
    if (const auto key = shortcutKey(panel.shortcut); key && isShortcutPressed(key->key, kAlt, key->digit)) selectPanel(panel.id);
  if (isShortcutPressed(Key::Q, kCtrl)) quit_ = true;
  if (isShortcutPressed(Key::O, kCtrl)) openBrowser(FileBrowser::Purpose::Model);
}

void App::frame(float frameMs) {
  pollOpen();
  if (pendingState_ && pendingOpen_.first.empty()) {  // a loaded session's state, once its model has opened (or failed to)
    applyState(std::move(*pendingState_));
    pendingState_.reset();
  }
  lesson_.beforeFrame(*this);
  if (auto newest = session_->latest(); newest != snapshot_) {
    snapshot_ = std::move(newest);
    for (auto& panel : panels_)
      if (std::string line = panel->onSnapshot(state_, *snapshot_); !line.empty()) showMessage(line, MessageKind::Info);
  }
  handleShortcuts();
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus |
                                 ImGuiWindowFlags_NoBackground;  // glClear paints it: one full-screen pass less
  ImGui::Begin("tscope", nullptr, flags);
  shared_ = {};
  PanelContext ctx{.session = *session_,
                   .state = state_,
                   .snapshot = snapshot_.get(),
                   .renderer = renderer_,
                   .shared = shared_,
                   .tasks = tasks_,
                   .training = training_.get(),
                   .sweeps = sweeps_.get(),
                   .screenshotOutcome = screenshotOutcome_,
                   .chosenImage = std::exchange(chosenImage_, std::string())};
  drawToolbar();
  tokenStrip_.draw(ctx);
  const float statusHeight = this->statusHeight(frameMs) + lesson_.captionSpace();  // the panel's child leaves both
  if (ImGui::BeginTabBar("panels")) {
    for (const PanelInfo& panel : panelCatalog()) {
      const PanelId id = panel.id;
      const int i = static_cast<int>(id);
      if (panel.has(kMoeModelsOnly) && !session_->config().isMoe()) continue;
      ImGuiTabItemFlags tabFlags = 0;
      if (requestedTab_ == i) tabFlags |= ImGuiTabItemFlags_SetSelected;
      const bool open = ImGui::BeginTabItem(panel.title, nullptr, tabFlags);
      recordItem(shared_, std::string("tab_") + panel.name);
      if (open) {
        state_.panel = id;
        ImGui::BeginChild("panel", ImVec2(0, -statusHeight));
        const ImVec2 panelMin = ImGui::GetWindowPos(), panelSize = ImGui::GetWindowSize();
        shared_.regions["panel"] = {panelMin.x, panelMin.y, panelMin.x + panelSize.x, panelMin.y + panelSize.y};
        const bool subTab = !requestedSubTab_.empty() && panelOfTab(requestedSubTab_) == id;
        ctx.selectTab = subTab ? requestedSubTab_ : "";
        {
          const FigureSinkScope figures(shared_.figures);  // the panel's plots, charts and maps, for Export SVG
          panels_[static_cast<size_t>(i)]->draw(ctx);
        }
        if (subTab && ++subTabFrames_ >= 2) requestedSubTab_.clear();
        ImGui::EndChild();
        ImGui::EndTabItem();
      }
    }
    requestedTab_ = -1;
    ImGui::EndTabBar();
  }
  lesson_.drawCaption(*this);
  if (!ctx.message.empty()) showMessage(ctx.message, MessageKind::Warning);
  if (!ctx.screenshotPath.empty()) {
    pendingScreenshot_ = ctx.screenshotPath;
    pendingCrop_ = ctx.screenshotCrop;
  }
  if (exportRequest_ == 3) exportFigures();
  else if (exportRequest_) exportMatrix(exportRequest_ == 2);
  exportRequest_ = 0;
  lastExportName_ = shared_.exportable.any() ? shared_.exportable.name : "";
  lastFigures_.clear();
  for (const VectorFigure& figure : shared_.figures) lastFigures_.push_back(figure.name);
  lastExportNote_ = shared_.exportNote;
  drawStatusBar(frameMs);
  ImGui::End();
  drawBrowser();
  if (showHelp_) drawHelpOverlay();
  // Entering or leaving the Inside or Efficient-attention panel, or another layer there, asks for other internals.
  // A layer whose maps the snapshot does not hold (past the map memory cap) is asked for: the
  // worker computes it alone from the prompt's kept attention inputs.
  const bool focusMissing =
      snapshot_ && snapshot_->error.empty() && !snapshot_->ids.empty() && !snapshot_->maps(state_.layer) && postedNeeds_.focusLayer != state_.layer;
  if (ctx.repost || focusMissing || needsChanged()) post(ctx.generateTokens);
  if (!ctx.openModel.empty()) openModel(ctx.openModel, ctx.openPrompt);
  if (ctx.browseImage) openBrowser(FileBrowser::Purpose::Image);
}

bool App::startTraining(const std::string& preset, int pauseAtStep, int layer, int head) {
  PanelCommand command;
  command.trainPreset = preset;
  command.trainSteps = pauseAtStep;
  command.layer = layer;
  command.head = head;
  if (!sendCommand(command)) return false;
  trainingRequested_ = true;
  return true;
}

bool App::trainingSettled() const {
  if (!trainingRequested_) return true;
  const TrainingStatus status = training_->latest()->status;
  return status == TrainingStatus::Paused || status == TrainingStatus::Done || status == TrainingStatus::Error;
}

bool App::takeScreenshotRequest(std::string& path, ScreenRect& crop) {
  if (pendingScreenshot_.empty()) return false;
  path = std::move(pendingScreenshot_);
  pendingScreenshot_.clear();
  auto it = shared_.regions.find("panel");
  crop = pendingCrop_ ? *pendingCrop_ : it != shared_.regions.end() ? it->second : ScreenRect{};
  pendingCrop_.reset();
  return true;
}

void App::screenshotDone(const std::string& path, const std::string& error) {
  showMessage(error.empty() ? "saved " + path : error, error.empty() ? MessageKind::Info : MessageKind::Error);
  screenshotOutcome_ = message_;
}

namespace {
// "3-11", "0, 2, 5" or "none".
std::string heldLayersText(const std::vector<int>& layers) {
  if (layers.empty()) return "none";
  if (layers.back() - layers.front() + 1 == (int)layers.size())
    return layers.size() == 1 ? std::to_string(layers[0]) : std::to_string(layers.front()) + "-" + std::to_string(layers.back());
  std::string text;
  for (int l : layers) text += (text.empty() ? "" : ", ") + std::to_string(l);
  return text;
}
}  // namespace

std::string App::statusLine(float frameMs) const {
  const ModelConfig& c = session_->config();
  const Snapshot* s = snapshot_.get();
  const std::string modelName = modelDisplayName(session_->modelPath());
  char reused[64] = "", computing[320] = "";
  if (s && s->reusedTokens > 0) std::snprintf(reused, sizeof reused, " (%d of %zu tokens reused)", s->reusedTokens, s->ids.size());
  if (session_->busy()) {
    const ComputeProgress p = session_->progress();
    if (p.layers > 0 && p.stage != ComputeProgress::Stage::Idle)
      std::snprintf(computing, sizeof computing, "  |  computing: %s, layer %d/%d", p.stageName(), p.layersDone, p.layers);
    else std::snprintf(computing, sizeof computing, "  |  computing...");
  }
  if (const std::string opening = openingProgress(); !opening.empty())  // the old model keeps answering until the new one has loaded
    std::snprintf(computing + std::strlen(computing), sizeof computing - std::strlen(computing), "  |  %s", opening.c_str());
  char forward[160];
  // A knob read after the forward (temperature, top-k, top-p, beam width) reruns only its stage.
  if (s && !s->ids.empty() && s->forwardMs == 0 && s->reusedTokens == (int)s->ids.size())
    std::snprintf(forward, sizeof forward, "no forward: only the stages after it changed");
  else std::snprintf(forward, sizeof forward, "forward %.1f ms%s, %.0f tok/s", s ? s->forwardMs : 0.0, reused, s ? s->tokensPerSecond : 0.0);
  char line[1024];
  std::snprintf(line, sizeof line, "%s (%d layers, %d heads, d=%d, V=%d)  |  %s  |  %s  |  frame %.1f ms%s", modelName.c_str(), c.n_layer, c.n_head,
                c.n_embd, c.vocab_size, session_->backendDescription().c_str(), forward, frameMs, computing);
  // What the map memory cap costs: which layers' maps are held, and why not the rest.
  if (s && s->trace.truncated) return std::string(line) + "  |  " + s->trace.note + " (layers " + heldLayersText(s->trace.layers) + ")";
  return line;
}

float App::statusHeight(float frameMs) const {
  const float width = ImGui::GetContentRegionAvail().x;
  const Snapshot* s = snapshot_.get();
  const std::string message = s && !s->error.empty() ? s->error : message_;
  float height = ImGui::CalcTextSize(statusLine(frameMs).c_str(), nullptr, false, width).y;
  if (!state_.interventions.empty()) height += ImGui::CalcTextSize(interventionsLine(state_).c_str(), nullptr, false, width).y;
  if (!state_.whatIfs.empty()) height += ImGui::CalcTextSize(whatIfsLine(state_, s).c_str(), nullptr, false, width).y;
  if (!message.empty()) height += ImGui::CalcTextSize(message.c_str(), nullptr, false, width).y;
  return height + ImGui::GetStyle().ItemSpacing.y * 3;
}

void App::showMessage(const std::string& message, MessageKind kind) {
  message_ = message;
  messageKind_ = kind;
  if (message.empty()) return;
  const std::time_t now = std::time(nullptr);
  char time[16] = "";
  if (const std::tm* local = std::localtime(&now)) std::strftime(time, sizeof time, "%H:%M:%S", local);
  messages_.push_back({time, kind, message});
  if (messages_.size() > kMessagesKept) messages_.pop_front();
}

// A message's colour: an outcome in the text colour, something to notice in amber, what went
// wrong in red (darker amber on the projector's light theme).
ImVec4 App::messageColour(MessageKind kind) const {
  if (kind == MessageKind::Error) return ImVec4(0.9f, 0.25f, 0.2f, 1.0f);
  if (kind == MessageKind::Warning) return state_.projector ? ImVec4(0.6f, 0.4f, 0.0f, 1.0f) : ImVec4(0.95f, 0.7f, 0.25f, 1.0f);
  return ImGui::GetStyleColorVec4(ImGuiCol_Text);
}

void App::drawStatusBar(float frameMs) {
  ImGui::Separator();
  if (!state_.interventions.empty()) {
    // A lecturer must not forget that every panel shows a broken model.
    ImGui::PushStyleColor(ImGuiCol_Text, kInterventionColor);
    ImGui::TextWrapped("%s", interventionsLine(state_).c_str());
    ImGui::PopStyleColor();
    recordItem(shared_, "interventions_status");
  }
  if (!state_.whatIfs.empty()) {  // the same: every panel shows a model with a piece taken out
    ImGui::PushStyleColor(ImGuiCol_Text, kInterventionColor);
    ImGui::TextWrapped("%s", whatIfsLine(state_, snapshot_.get()).c_str());
    ImGui::PopStyleColor();
    recordItem(shared_, "what_if_status");
  }
  ImGui::TextWrapped("%s", statusLine(frameMs).c_str());
  recordItem(shared_, "status_bar");
  const Snapshot* s = snapshot_.get();
  const bool computeError = s && !s->error.empty();
  const std::string& line = computeError ? s->error : message_;
  if (!line.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, messageColour(computeError ? MessageKind::Error : messageKind_));
    ImGui::TextWrapped("%s", line.c_str());
    ImGui::PopStyleColor();
    recordItem(shared_, "message");
    if (ImGui::IsItemHovered() && !messages_.empty()) {  // the last few, with their time
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
      for (const LoggedMessage& m : messages_) {
        ImGui::PushStyleColor(ImGuiCol_Text, messageColour(m.kind));
        ImGui::TextWrapped("%s  %s", m.time.c_str(), m.text.c_str());
        ImGui::PopStyleColor();
      }
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
  }
}

void App::drawHelpOverlay() {
  ImGui::SetNextWindowPos(ImGui::GetMainViewport()->GetCenter(), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::Begin("Keyboard shortcuts", &showHelp_, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse);
  const char* rows[][2] = {{"Left / Right", "previous / next head"},
                           {"Up / Down", "previous / next layer (Inside the block, Efficient attention: query token)"},
                           {"A", "average over heads"},
                           {"S", "pre-softmax scores / probabilities"},
                           {"G", "grid of every layer x head"},
                           {"L", "lines view"},
                           {"P", "projector mode (light, high contrast)"},
                           {"Ctrl + / Ctrl -", "larger / smaller text"},
                           {"PageDown, Space, Right, N", "lesson: next step"},
                           {"PageUp, Backspace, Left, B", "lesson: previous step"},
                           {"Home / End", "lesson: first / last step"},
                           {"R or Enter", "lesson: reveal the live answer to the step's question"},
                           {"Escape", "stop opening a model; else leave the lesson (free play; Resume in the toolbar)"},
                           {"Ctrl O", "open a model with the file browser (Up/Down, Enter, Backspace, Esc)"},
                           {"F1 or ?", "this help"},
                           {"Ctrl Q", "quit"}};
  if (ImGui::BeginTable("keys", 2, ImGuiTableFlags_RowBg)) {
    auto row = [](const std::string& keys, const std::string& what) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(keys.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(what.c_str());
    };
    for (const auto& r : rows) row(r[0], r[1]);
    for (const PanelInfo& panel : panelCatalog())  // the panels' shortcuts, from their registrations
      row(shortcutLabel(panel.shortcut), std::string(panel.title) + (panel.has(kMoeModelsOnly) ? " (mixture-of-experts models)" : ""));
    ImGui::EndTable();
  }
  ImGui::End();
}

}  // namespace tscope::gui
