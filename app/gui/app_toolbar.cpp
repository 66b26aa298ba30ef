// The App's toolbar and what its buttons do: Save PNG, Export CSV / NPY (what the panel drew this
// frame), the session file's path with Save and Load, the model picker; and applying a loaded
// session's state to the model. Split from app.cpp.
#include <imgui.h>

#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "app/gui/app.h"
#include "app/gui/widgets/layout.h"
#include "app/session/session_file.h"
#include "model/core/error.h"
#include "model/io/npy.h"

namespace tscope::gui {

namespace {
std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y%m%d-%H%M%S", std::localtime(&now));
  return buffer;
}
}  // namespace

void App::drawToolbar() {
  const bool savePng = ImGui::Button("Save PNG");
  recordItem(shared_, "save_png");
  if (savePng) {
    pendingScreenshot_ = std::string("tscope-") + panelName(state_.panel) + "-" + timestamp() + ".png";
    pendingCrop_.reset();  // the whole panel
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("save the panel on screen as a PNG in the current folder");
  sameLineIfFits("Export CSV");
  const bool exportable = !lastExportName_.empty();
  const std::string exportWhy = !exportable ? (lastExportNote_.empty() ? std::string("nothing on screen to export: this view shows no matrix")
                                                                       : "nothing on screen to export: " + lastExportNote_)
                                            : "save " + lastExportName_ + ", as on screen";
  ImGui::BeginDisabled(!exportable);
  if (ImGui::Button("Export CSV")) exportRequest_ = 1;
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", exportWhy.c_str());
  recordItem(shared_, "export_csv");
  sameLineIfFits("Export NPY");
  if (ImGui::Button("Export NPY")) exportRequest_ = 2;
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", exportWhy.c_str());
  recordItem(shared_, "export_npy");
  ImGui::EndDisabled();
  sameLineIfFits("Export SVG");
  ImGui::BeginDisabled(lastFigures_.empty());
  if (ImGui::Button("Export SVG")) exportRequest_ = 3;
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("%s", lastFigures_.empty()
                                ? "this view draws no heatmap, plot or chart to save as a vector figure"
                                : ("save the " + std::to_string(lastFigures_.size()) +
                                   " figure(s) on screen (heatmaps, plots, charts) as SVG, one file each, with their labels and scales")
                                      .c_str());
  recordItem(shared_, "export_svg");
  ImGui::EndDisabled();
  sameLineIfFits("", ImGui::GetFontSize() * 14);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
  ImGui::InputText("##session", &sessionPath_);
  recordItem(shared_, "session_path");
  sameLineIfFits("...");
  if (ImGui::Button("...##session")) openBrowser(FileBrowser::Purpose::Session);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("find a session file to load, or a folder to save one in");
  recordItem(shared_, "browse_session");
  sameLineIfFits("Save session");
  if (ImGui::Button("Save session")) saveSession();
  recordItem(shared_, "save_session");
  sameLineIfFits("Load session");
  if (ImGui::Button("Load session")) loadSession();
  recordItem(shared_, "load_session");
  sameLineIfFits("projector (P)", ImGui::GetFrameHeight());
  ImGui::Checkbox("projector (P)", &state_.projector);
  recordItem(shared_, "projector");
  sameLineIfFits("text size", ImGui::GetFontSize() * 6);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  ImGui::SliderFloat("text size", &state_.fontScale, 0.75f, 3.0f, "%.2fx");
  recordItem(shared_, "text_size");
  sameLineIfFits("Help (F1)");
  if (ImGui::Button("Help (F1)")) showHelp_ = !showHelp_;
  recordItem(shared_, "help");
  sameLineIfFits("What if (8 on)...");
  if (drawWhatIfMenu(whatIfMenu_, state_.whatIfs, session_->config(), shared_)) post();
  drawModelPicker();
  lesson_.drawPicker(*this);
}

void App::drawModelPicker() {
  const std::string current = modelDisplayName(session_->modelPath());
  sameLineIfFits("", ImGui::GetFontSize() * 10);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  // As tall as the window allows: the shipped models and a cache of several fit without scrolling.
  if (ImGui::BeginCombo("##models", current.c_str(), ImGuiComboFlags_HeightLargest)) {
    for (const std::string& path : shippedModels_) {
      const std::string name = std::filesystem::path(path).filename().string();
      if (ImGui::Selectable(name.c_str(), path == session_->modelPath())) openModel(path, "");
    }
    for (size_t i = 0; i < cachedModels_.size(); ++i) {
      const DownloadedModel& model = cachedModels_[i];
      if (i == 0 || cachedModels_[i - 1].source != model.source) {
        ImGui::Separator();
        ImGui::TextDisabled("%s", model.source.c_str());
      }
      ImGui::BeginDisabled(!model.problem.empty());
      if (ImGui::Selectable(model.id.c_str(), model.path == session_->modelPath())) openModel(model.path, "");
      ImGui::EndDisabled();
      if (!model.problem.empty() && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", model.problem.c_str());
      recordItem(shared_, "model_cached_" + std::to_string(i));
    }
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("switch to a shipped model, one in the HuggingFace cache or one Ollama downloaded (the prompt stays)");
  recordItem(shared_, "model_combo");
  sameLineIfFits("", ImGui::GetFontSize() * 14);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
  const bool entered = ImGui::InputText("##modelpath", &modelPathInput_, ImGuiInputTextFlags_EnterReturnsTrue);
  recordItem(shared_, "model_path");
  sameLineIfFits("...");
  if (ImGui::Button("...##model")) openBrowser(FileBrowser::Purpose::Model);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("browse for a model folder or an llm.c .bin checkpoint (Ctrl+O)");
  recordItem(shared_, "browse_model");
  sameLineIfFits("Open model");
  if ((ImGui::Button("Open model") || entered) && !modelPathInput_.empty()) openModel(modelPathInput_, "");
  recordItem(shared_, "open_model");
  if (!opening().empty()) {
    sameLineIfFits("Stop opening");
    if (ImGui::Button("Stop opening")) cancelOpen();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("stop loading %s; the model on screen stays (Esc)", opening().c_str());
    recordItem(shared_, "stop_open");
  }
}

std::string keepFittingInterventions(std::vector<InterventionSpec>& specs, const ModelConfig& config) {
  std::string dropped;
  std::erase_if(specs, [&](const InterventionSpec& spec) {
    const std::string problem = interventionProblem(spec, config);
    if (!problem.empty() && dropped.empty()) dropped = "left out an intervention: " + problem;
    return !problem.empty();
  });
  return dropped;
}

void App::applyState(AppState state) {
  const ModelConfig& c = session_->config();
  state.layer = std::clamp(state.layer, 0, c.n_layer - 1);
  state.head = std::clamp(state.head, 0, c.n_head - 1);
  if (std::string dropped = keepFittingInterventions(state.interventions, c); !dropped.empty()) showMessage(dropped, MessageKind::Warning);
  if (std::string dropped = keepFittingWhatIfs(state.whatIfs, c); !dropped.empty()) showMessage(dropped, MessageKind::Warning);
  state_ = std::move(state);
  selectPanel(state_.panel);
  post();
}

// Every heatmap the panel drew this frame as its own SVG (svg_figure.h), named after the figure.
void App::exportFigures() {
  if (shared_.figures.empty()) {
    showMessage("nothing on screen to export as SVG: this view draws no heatmap, plot or chart", MessageKind::Warning);
    return;
  }
  const std::string stamp = timestamp();
  std::string written;
  try {
    for (const VectorFigure& figure : shared_.figures) {
      const std::string path = "tscope-" + figure.name + "-" + stamp + ".svg";
      writeFileAtomically(path, figure.svg());
      written += (written.empty() ? "" : ", ") + path;
    }
    showMessage("exported " + written, MessageKind::Info);
  } catch (const std::exception& e) {
    showMessage(e.what(), MessageKind::Error);
  }
}

// Exports what the panel drew this frame, or nothing (never an earlier view's matrix).
void App::exportMatrix(bool npy) {
  ExportableMatrix m = shared_.exportable;
  if (!m.any()) {
    showMessage("nothing on screen to export: " + (shared_.exportNote.empty() ? std::string("this view shows no matrix") : shared_.exportNote),
                MessageKind::Warning);
    return;
  }
  const std::string path = "tscope-" + m.name + "-" + timestamp() + (npy ? ".npy" : ".csv");
  try {
    if (m.values.empty()) m.values = m.make();
    if ((size_t)m.rows * m.cols != m.values.size())
      throw Error("export of " + m.name + ": " + std::to_string(m.values.size()) + " values for " + std::to_string(m.rows) + " x " +
                  std::to_string(m.cols));
    if (npy) {
      writeNpy(path, m.values.data(), m.shape.empty() ? std::vector<int64_t>{m.rows, m.cols} : m.shape);
    } else {
      std::string csv;
      for (int r = 0; r < m.rows; ++r) {
        for (int c = 0; c < m.cols; ++c) {
          char cell[32];
          std::snprintf(cell, sizeof cell, "%s%.7g", c ? "," : "", m.values[(size_t)r * m.cols + c]);
          csv += cell;
        }
        csv += "\n";
      }
      writeFileAtomically(path, csv);
    }
    showMessage("exported " + path + " (" + std::to_string(m.rows) + " x " + std::to_string(m.cols) + ")", MessageKind::Info);
  } catch (const std::exception& e) {
    showMessage(e.what(), MessageKind::Error);
  }
}

}  // namespace tscope::gui
