// The App: one main window with the prompt and token strip on top, a tab per panel, and the
// status bar. It owns the per-session view state (AppState, saved in session files), the panels
// (each with its own view state, panels/panel_*.h), and the Session that runs the model.
#pragma once
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/gui/lesson_player.h"
#include "app/gui/widgets/file_browser.h"
#include "app/gui/widgets/heatmap.h"
#include "app/gui/panels/panel_prompt.h"
#include "app/gui/panels/panels.h"
#include "app/gui/what_if_menu.h"
#include "model/io/hf_checkpoint.h"
#include "app/session/session.h"
#include "app/session/tasks.h"
#include "app/session/training_session.h"
#include "app/gui/session_names.h"

namespace tscope::gui {

// Removes the specs that do not fit `config` (another model's layers or heads); returns one line
// naming the first one removed, or "".
std::string keepFittingInterventions(std::vector<InterventionSpec>& specs, const ModelConfig& config);

class App {
 public:
  App(std::unique_ptr<Session> session, AppState state);
  // One UI frame: read the newest snapshot, draw every panel, post a request if a knob changed.
  void frame(float frameMs);
  bool wantsQuit() const { return quit_; }
  void requestRecompute() { post(); }  // after changing state() from outside a panel
  // Panel names as used by --panel; selectPanel returns false for an unknown name.
  bool selectPanel(const std::string& name);
  // Opens a panel's sub-tab by its region name (app_state.h's panelOfTab) when that panel draws.
  void selectSubTab(const std::string& tab) {
    requestedSubTab_ = tab;
    subTabFrames_ = 0;
  }
  void selectPanel(PanelId id);  // the Experts panel only for MoE models
  // True while something on screen changes without input (a forward, training, a new snapshot):
  // the frame loop then draws continuously, else it sleeps until input.
  bool needsFrames() const;
  AppState& state() { return state_; }
  Session& session() { return *session_; }
  // True once a snapshot for the latest posted request is on screen and no task (tasks.h) is running.
  bool upToDate() const;
  // One line shown in the app (bad session file, invalid config typed in a panel, ...).
  // The status bar's line: an outcome (Info, the text colour), something to notice (Warning, amber)
  // or what went wrong (Error, red).
  // The last kMessagesKept stay, with the time each came, in the line's tooltip.
  enum class MessageKind { Info, Warning, Error };
  void showMessage(const std::string& message, MessageKind kind = MessageKind::Error);
  struct LoggedMessage {
    std::string time;  // HH:MM:SS, local
    MessageKind kind;
    std::string text;
  };
  static constexpr size_t kMessagesKept = 8;
  const std::deque<LoggedMessage>& messages() const { return messages_; }  // oldest first
  // A PNG the user asked for this frame (path, and the panel's rectangle to crop to), or none.
  bool takeScreenshotRequest(std::string& path, ScreenRect& crop);
  void screenshotDone(const std::string& path, const std::string& error);
  const SharedView& shared() const { return shared_; }  // this frame's screen regions and exportable matrix
  const AppState& state() const { return state_; }
  const Session& session() const { return *session_; }
  const Snapshot* snapshot() const { return snapshot_.get(); }
  const std::string& message() const { return message_; }
  // What Export would save now (the name of the matrix the last frame drew; "" = nothing) and why not.
  const std::string& exportName() const { return lastExportName_; }
  const std::string& exportNote() const { return lastExportNote_; }
  const std::vector<std::string>& figures() const { return lastFigures_; }
  MessageKind messageKind() const { return messageKind_; }
  const std::vector<DownloadedModel>& cachedModels() const { return cachedModels_; }
  bool helpOpen() const { return showHelp_; }
  // Gives a command to every panel (a lesson step's architecture or expert, a training preset);
  // true when a panel took it.
  bool sendCommand(const PanelCommand& command);
  // Starts a training preset in the Training panel, pausing after pauseAtStep steps, showing the
  // given layer and head large (-1: the panel's default) (--train-preset).
  bool startTraining(const std::string& preset, int pauseAtStep, int layer = -1, int head = -1);
  // False while a run started by startTraining is still preparing or running.
  bool trainingSettled() const;
  // Opens a model directory in the explorer (a new Session; the prompt too when not empty) on the
  // "open model" task channel: the window keeps drawing, and the old model's panels keep working,
  // until it is loaded; app_open.cpp. A newer open replaces one still loading.
  void openModel(const std::string& path, const std::string& prompt) { pendingOpen_ = {path, prompt}; }
  // The model directory being opened ("" when none), for the status bar and the report.
  const std::string& opening() const { return pendingOpen_.first; }
  // Stops the open in flight (Esc, the toolbar's Stop): the load ends at its next tensor and the
  // model on screen stays. No-op when none is.
  void cancelOpen();
  // "opening NAME: tensor 120 of 290, 2.1 s" ("" when no open is in flight), for the status bar.
  std::string openingProgress() const;
  // The file browser (Browse buttons, Ctrl+O) and the recent files it lists, kept in the preferences.
  const FileBrowser& browser() const { return browser_; }
  void openBrowser(FileBrowser::Purpose purpose);
  const std::vector<std::string>& recentFiles() const { return recentFiles_; }
  void setRecentFiles(std::vector<std::string> files) { recentFiles_ = std::move(files); }
  LessonPlayer& lessons() { return lesson_; }  // the lesson being presented (--lesson, the toolbar's picker)
  const LessonPlayer& lessons() const { return lesson_; }

 private:
  friend class LessonPlayer;  // enters a lesson's step: opens its model, applies its state, sets panels
  void drawStatusBar(float frameMs);
  ImVec4 messageColour(MessageKind kind) const;
  std::string statusLine(float frameMs) const;
  float statusHeight(float frameMs) const;
  void drawToolbar();
  void drawModelPicker();
  void loadSession();
  void saveSession();
  void drawBrowser();  // the file browser while open, and what it chose
  void addRecent(const std::string& path);
  void applyState(AppState state);  // a session file's state, clamped to the model
  void exportMatrix(bool npy);
  void exportFigures();  // every figure the panel drew this frame, one SVG each
  void drawHelpOverlay();
  void handleShortcuts();
  void post(int generateTokens = 0);  // > 0: the Next-token panel's Step / Generate N
  // Makes every registered panel anew (fresh caches for a new model), but those that show their
  // own run (kOwnRun: Training) only once: their run outlives the explorer's model.
  void makeModelPanels();
  // app_open.cpp: posts pendingOpen_ when it is not the open posted last, and takes a finished one.
  void pollOpen();
  struct OpenedModel {  // the "open model" channel's result
    uint64_t id = 0;    // the App's count of opens posted: only the newest is taken
    std::string path, prompt;
    mutable std::shared_ptr<Session> session;  // null when it failed; taken (moved out) by the App
    std::string error;
  };
  void finishOpen(const OpenedModel& opened);
  // Image models: a picture of the model's size in the state (a default digit or photograph when it
  // has none), the Vision panel selected when `openVision`; text models: no picture.
  void fitImageInput(bool openVision);

  // First: destroyed last, when every task has been cancelled and joined (tasks.h).
  Tasks tasks_;
  std::shared_ptr<Session> session_;
  std::unique_ptr<TrainingSession> training_;
  std::unique_ptr<SweepSession> sweeps_;  // the Scaling panel's sweep; outlives the explorer's model like training_
  bool trainingRequested_ = false;
  std::pair<std::string, std::string> pendingOpen_;  // model directory and prompt to open ("" none), until it has opened or failed
  std::pair<std::string, std::string> postedOpen_;   // the open posted to the task channel last
  uint64_t opensPosted_ = 0;
  std::chrono::steady_clock::time_point openSince_;  // when the open in flight was posted
  std::optional<AppState> pendingState_;             // a loaded session's state, applied after that open
  std::vector<std::string> shippedModels_;           // assets/models/* directories, for the model picker
  std::vector<DownloadedModel> cachedModels_;        // the HuggingFace cache's models, for the model picker
  std::string modelPathInput_;                       // the picker's path field
  AppState state_;
  HeatmapRenderer renderer_;
  SharedView shared_;
  TokenStrip tokenStrip_;
  std::vector<std::unique_ptr<Panel>> panels_;  // (PanelId::Count) one per registered panel (panel_list.h)
  std::shared_ptr<const Snapshot> snapshot_;
  std::string message_;
  MessageKind messageKind_ = MessageKind::Info;
  std::deque<LoggedMessage> messages_;
  bool quit_ = false;
  bool showHelp_ = false;
  int requestedTab_ = -1;    // a tab to select on the next frame (--panel, Alt+N)
  std::string chosenImage_;  // the picture the browser chose, for the Vision panel's next frame
  // A panel's sub-tab to open (a lesson step's "tab"), passed to its panel as PanelContext::selectTab
  // on the frames that panel draws until it has taken (two frames: ImGui selects on the next one).
  std::string requestedSubTab_;
  int subTabFrames_ = 0;
  // What the last request asked for the panel on screen (session.h's panelNeeds): another panel,
  // layer or query row there that needs other internals is posted again.
  ViewNeeds postedNeeds_;
  bool needsChanged() const;
  std::string pendingScreenshot_;
  std::optional<ScreenRect> pendingCrop_;  // a panel's part of the window to save (none: the whole panel)
  std::string screenshotOutcome_;          // "saved PATH" or the error of the last screenshot
  // The toolbar is drawn before the panels: its Export buttons are enabled by the last frame's
  // exportable, and a press exports this frame's once the panel has drawn (what is on screen).
  std::string lastExportName_;  // "" = none
  std::string lastExportNote_;
  int exportRequest_ = 0;                 // 1: CSV, 2: NPY, 3: SVG, pressed this frame
  std::vector<std::string> lastFigures_;  // the vector figures the last frame drew (Export SVG)
  std::string sessionPath_ = "tscope-session.json";
  FileBrowser browser_;
  std::vector<std::string> recentFiles_;  // the latest first
  WhatIfMenu whatIfMenu_;                 // the toolbar's What-if menu (what_if_menu.h)
  std::string promptAside_;               // the prompt of the other kind of model (decoder-only or encoder-decoder), kept while switched away
  LessonPlayer lesson_{TSCOPE_SOURCE_DIR "/assets/lessons", TSCOPE_SOURCE_DIR "/assets/models"};
};

}  // namespace tscope::gui
