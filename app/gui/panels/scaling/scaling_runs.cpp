// The Scaling panel's "Your runs" tab (scaling_lab.h): the sweep picker (shipped sweeps, the user's
// own under the sweeps folder, any path), Start preset (on Brown or a text file) / Pause / Resume /
// Extend (sizes and budgets added to the grid) on the app's SweepSession
// with progress, the four plots of scaling_plots.cpp (2 x 2, or two at a time in a short window),
// the fitted constants with their bootstrap intervals (the rows of fitsCsv, so the table is exactly
// what Save CSV writes), the tokens per parameter our fit implies beside Chinchilla's 20, the export.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "app/gui/panels/scaling/scaling_lab.h"
#include "app/gui/widgets/plot.h"
#include "model/core/error.h"
#include "model/io/npy.h"

namespace tscope::gui {

namespace {

namespace fs = std::filesystem;
const ImVec4 kErrorColour(0.9f, 0.3f, 0.25f, 1.0f);
constexpr size_t kRecentSweeps = 8;

fs::path sweepsRoot() { return fs::path(defaultSweepDir("x")).parent_path(); }

// The user's sweep directories under the sweeps folder, newest first.
std::vector<std::string> recentSweeps() {
  std::vector<std::pair<fs::file_time_type, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(sweepsRoot(), ec))
    if (fs::exists(entry.path() / "sweep.json", ec)) found.emplace_back(fs::last_write_time(entry.path() / "sweep.json", ec), entry.path().string());
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> dirs;
  for (size_t i = 0; i < found.size() && i < kRecentSweeps; ++i) dirs.push_back(found[i].second);
  return dirs;
}

// The short name of a sweep on screen: its shipped name or its directory's.
std::string sweepName(const ScalingRunsView& v, const std::string& path) {
  for (const auto& [name, file] : v.shipped)
    if (file == path) return name + " (shipped)";
  fs::path p(path);
  if (p.filename() == "sweep.json") p = p.parent_path();
  return p.filename().string();
}

void drawPicker(PanelContext& ctx, ScalingRunsView& v, const SweepView& view) {
  SweepSession& sweeps = *ctx.sweeps;
  const float font = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(font * 14);
  const std::string shown = view.path.empty() ? "pick a sweep" : sweepName(v, view.path);
  if (ImGui::BeginCombo("##scaling_sweep", shown.c_str())) {
    for (const auto& [name, file] : v.shipped) {
      if (ImGui::Selectable((name + " (shipped)").c_str(), file == view.path)) sweeps.open(file);
      recordItem(ctx.shared, "scaling_sweep_" + name);
    }
    for (size_t i = 0; i < v.recent.size(); ++i) {
      if (ImGui::Selectable((sweepName(v, v.recent[i]) + "##recent").c_str(), v.recent[i] == view.path)) sweeps.open(v.recent[i]);
      recordItem(ctx.shared, "scaling_sweep_recent_" + std::to_string(i));
    }
    if (v.shipped.empty() && v.recent.empty()) ImGui::TextDisabled("no sweeps yet: start a preset");
    ImGui::EndCombo();
  }
  recordItem(ctx.shared, "scaling_sweep");
  ImGui::SameLine();
  const float openWidth = ImGui::CalcTextSize("Open").x + ImGui::GetStyle().FramePadding.x * 2;
  ImGui::SetNextItemWidth(std::max(font * 8, ImGui::GetContentRegionAvail().x - openWidth - ImGui::GetStyle().ItemSpacing.x));
  const bool entered =
      ImGui::InputTextWithHint("##scaling_path", "a sweep directory or sweep.json", &v.pathInput, ImGuiInputTextFlags_EnterReturnsTrue);
  recordItem(ctx.shared, "scaling_path");
  ImGui::SameLine();
  const bool clicked = ImGui::Button("Open");
  recordItem(ctx.shared, "scaling_open");
  if ((entered || clicked) && !v.pathInput.empty()) sweeps.open(v.pathInput);
}

void drawRunControls(PanelContext& ctx, ScalingRunsView& v, const SweepView& view) {
  SweepSession& sweeps = *ctx.sweeps;
  const float font = ImGui::GetFontSize();
  const std::vector<SweepPreset>& presets = sweepPresets();
  v.preset = std::clamp(v.preset, 0, std::max(0, static_cast<int>(presets.size()) - 1));
  if (presets.empty()) return;
  ImGui::SetNextItemWidth(font * 9);
  if (ImGui::BeginCombo("##scaling_preset", presets[v.preset].key.c_str())) {
    for (size_t i = 0; i < presets.size(); ++i) {
      if (ImGui::Selectable(presets[i].key.c_str(), static_cast<int>(i) == v.preset)) v.preset = static_cast<int>(i);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s: %s", presets[i].name.c_str(), presets[i].description.c_str());
      recordItem(ctx.shared, "scaling_preset_" + presets[i].key);
    }
    ImGui::EndCombo();
  }
  recordItem(ctx.shared, "scaling_preset");
  const std::string& key = presets[v.preset].key;
  if (v.startDirPreset != key && (v.startDir.empty() || !v.startDirPreset.empty())) {
    v.startDir = defaultSweepDir(key);  // a fresh name for the preset (an edited one is kept)
    v.startDirPreset = key;
  }
  ImGui::SameLine();
  const float buttons = font * 8;
  ImGui::SetNextItemWidth(std::max(font * 8, ImGui::GetContentRegionAvail().x - buttons));
  if (ImGui::InputTextWithHint("##scaling_start_dir", "directory of the new sweep", &v.startDir)) v.startDirPreset.clear();
  recordItem(ctx.shared, "scaling_start_dir");
  const bool running = view.status == SweepState::Running;
  ImGui::SameLine();
  ImGui::BeginDisabled(running);
  if (ImGui::Button("Start preset")) {
    sweeps.start(key, v.startDir, presets[v.preset].spec.data.brown ? v.textFile : "");
    v.recent.insert(v.recent.begin(), v.startDir);
    v.startDirPreset = "";  // the next start gets a fresh directory
    v.startDir.clear();
  }
  recordItem(ctx.shared, "scaling_start");
  ImGui::EndDisabled();
}

// Pause and Resume, on the progress row (always on screen, even with "Train a sweep" folded).
void drawPauseResume(PanelContext& ctx, const SweepView& view) {
  SweepSession& sweeps = *ctx.sweeps;
  const bool running = view.status == SweepState::Running;
  ImGui::BeginDisabled(!running);
  if (ImGui::Button("Pause")) sweeps.pause();
  recordItem(ctx.shared, "scaling_pause");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(running || view.readOnly || view.path.empty() || view.runsDone >= view.runs);
  if (ImGui::Button("Resume")) sweeps.resume();
  recordItem(ctx.shared, "scaling_resume");
  ImGui::EndDisabled();
}

// Comma- or space-separated items of a field, each parsed; throws the first one that does not parse.
template <typename T, typename Parse>
std::vector<T> parseList(const std::string& text, Parse parse) {
  std::vector<T> items;
  std::string item;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == ',' || c == ' ' || c == '\t') {
      if (!item.empty()) items.push_back(parse(item));
      item.clear();
    } else {
      item += c;
    }
  }
  return items;
}

// The data of the next Start (a text file in place of Brown, for the text presets) and Extend, which
// adds sizes and budgets to the sweep on screen (its finished runs stay; the new ones train).
void drawDataAndExtend(PanelContext& ctx, ScalingRunsView& v, const SweepView& view) {
  SweepSession& sweeps = *ctx.sweeps;
  const float font = ImGui::GetFontSize(), spacing = ImGui::GetStyle().ItemSpacing.x;
  const std::vector<SweepPreset>& presets = sweepPresets();
  const bool textPreset = !presets.empty() && presets[v.preset].spec.data.brown;
  const float half = (ImGui::GetContentRegionAvail().x - spacing) / 2;
  const float label = ImGui::CalcTextSize("Start on").x + spacing;
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("Start on");
  ImGui::SameLine();
  ImGui::BeginDisabled(!textPreset);
  ImGui::SetNextItemWidth(std::max(font * 8, half - label));
  ImGui::InputTextWithHint("##scaling_text_file", textPreset ? "Brown, or a UTF-8 text file (path)" : "the task's own examples", &v.textFile);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(
        "A text file (UTF-8, up to 256 MB) replaces Brown as the data of the next Start preset; the preset's sizes, budgets and vocabulary stay.");
  recordItem(ctx.shared, "scaling_text_file");
  ImGui::EndDisabled();

  ImGui::SameLine();
  const bool writable = !view.readOnly && !view.path.empty();
  ImGui::BeginDisabled(!writable);
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("Extend");
  ImGui::SameLine();
  const float button = ImGui::CalcTextSize("Extend").x + ImGui::GetStyle().FramePadding.x * 2;
  const float field = std::max(font * 5, (ImGui::GetContentRegionAvail().x - button - 2 * spacing) / 2);
  ImGui::SetNextItemWidth(field);
  ImGui::InputTextWithHint("##scaling_extend_sizes", "sizes: L3-d96, L4-d128", &v.extendSizes);
  recordItem(ctx.shared, "scaling_extend_sizes");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(field);
  ImGui::InputTextWithHint("##scaling_extend_tokens", "budgets: 4M, 8M", &v.extendTokens);
  recordItem(ctx.shared, "scaling_extend_tokens");
  ImGui::SameLine();
  if (ImGui::Button("Extend##scaling")) {
    try {
      std::vector<SweepSize> sizes = parseList<SweepSize>(v.extendSizes, parseSweepSize);
      std::vector<int64_t> tokens = parseList<int64_t>(v.extendTokens, parseTokenCount);
      if (sizes.empty() && tokens.empty()) throw Error("type sizes (L3-d96) or budgets (4M) to add to the grid");
      sweeps.extend(std::move(sizes), std::move(tokens));
      v.extendError.clear();
      v.extendSizes.clear();
      v.extendTokens.clear();
    } catch (const std::exception& e) {
      v.extendError = e.what();
    }
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip(writable ? "Adds the sizes and budgets to this sweep's grid: the finished runs stay, only the new runs train."
                               : "A shipped sweep is read-only: start a preset to extend your own.");
  recordItem(ctx.shared, "scaling_extend");
  ImGui::EndDisabled();
  if (!v.extendError.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextUnformatted(v.extendError.c_str());
    ImGui::PopStyleColor();
  }
}

void drawProgress(PanelContext& ctx, const SweepView& view) {
  drawPauseResume(ctx, view);
  ImGui::SameLine();
  char overlay[160];
  if (view.active.size() > 1)
    std::snprintf(overlay, sizeof overlay, "%d/%d runs finished, %d at once  %s  step %d/%d", view.runsDone, view.runs,
                  static_cast<int>(view.active.size()), view.current.c_str(), view.step, view.steps);
  else if (!view.current.empty())
    std::snprintf(overlay, sizeof overlay, "run %d/%d  %s  step %d/%d", view.runsDone + 1, view.runs, view.current.c_str(), view.step, view.steps);
  else std::snprintf(overlay, sizeof overlay, "%d/%d runs finished", view.runsDone, view.runs);
  const float runShare = view.steps > 0 ? static_cast<float>(view.step) / view.steps : 0;
  float inProgress = 0;  // the runs in progress, each as the share of its steps done
  for (const SweepActiveRun& run : view.active) inProgress += run.steps > 0 ? static_cast<float>(run.step) / run.steps : 0;
  if (view.active.empty() && !view.current.empty()) inProgress = runShare;
  const float share = view.runs > 0 ? (view.runsDone + inProgress) / view.runs : 0;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 24);
  ImGui::ProgressBar(share, ImVec2(ImGui::GetFontSize() * 24, 0), overlay);
  if (ImGui::IsItemHovered() && !view.device.empty()) {
    std::string tip = "training on the " + view.device;
    for (const SweepActiveRun& run : view.active) tip += "\n" + run.name + ": step " + std::to_string(run.step) + "/" + std::to_string(run.steps);
    ImGui::SetTooltip("%s", tip.c_str());
  }
  ImGui::SameLine();
  if (view.status == SweepState::Running && view.sweepEtaSeconds > 0)
    ImGui::Text("ETA run %s, sweep %s", formatDuration(view.runEtaSeconds).c_str(), formatDuration(view.sweepEtaSeconds).c_str());
  else if (view.status == SweepState::Running) ImGui::TextUnformatted("ETA after a few steps");
  ImGui::SameLine();
  if (view.status == SweepState::Error) ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
  ImGui::TextUnformatted((std::string(toString(view.status)) + ": " + view.message).c_str());
  if (view.status == SweepState::Error) ImGui::PopStyleColor();
}

// fitsCsv's rows (law, constant, value, lo, hi); no field of it is quoted.
std::vector<std::vector<std::string>> fitRows(const SweepFits& fits) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(fitsCsv(fits));
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) fields.push_back(cell);
    if (fields.size() >= 3) rows.push_back(std::move(fields));
  }
  return rows;
}

std::string shortNumber(const std::string& text) {
  if (text.empty()) return "";
  char out[32];
  std::snprintf(out, sizeof out, "%.4g", std::strtod(text.c_str(), nullptr));
  return out;
}

void drawConstants(PanelContext& ctx, const SweepView& view) {
  if (!view.fits) {
    if (view.results && view.results->runs.size() >= 2)
      ImGui::TextDisabled("Fitting the laws to %d runs...", static_cast<int>(view.results->runs.size()));
    else ImGui::TextDisabled("The laws are fitted when two runs have finished.");
    return;
  }
  const SweepFits& fits = *view.fits;
  if (fits.hasChinchilla) {
    char value[32];
    std::snprintf(value, sizeof value, "%.1f", fits.optimumAtSweep.tokensPerParam);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("tokens per parameter our fit implies");
    ImGui::TextWrapped("at our largest budget, C = %s", formatScientific(fits.optimumAtSweep.flops).c_str());
    ImGui::PopStyleColor();
    ImGui::SetWindowFontScale(2.0f);
    ImGui::TextUnformatted(value);
    ImGui::SameLine();
    ImGui::TextDisabled("vs 20");
    ImGui::SetWindowFontScale(1.0f);
    recordItem(ctx.shared, "scaling_runs_ratio");
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("Chinchilla's rule of thumb: 20. Ours extrapolated to Chinchilla's budget: %.3g", fits.optimumAtChinchilla.tokensPerParam);
    ImGui::PopStyleColor();
  }
  for (const std::string& note : fits.notes) ImGui::TextWrapped("%s", note.c_str());
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("scaling_runs_table", 3, flags, ImVec2(0, std::max(ImGui::GetFrameHeight() * 3, ImGui::GetContentRegionAvail().y)))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* column : {"constant", "value", "80% interval"}) ImGui::TableSetupColumn(column);
  ImGui::TableHeadersRow();
  std::string law;
  for (const std::vector<std::string>& row : fitRows(fits)) {
    if (row[0] != law) {  // the law as a heading row
      law = row[0];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%s", law.c_str());
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Indent();
    ImGui::TextUnformatted(row[1].c_str());
    ImGui::Unindent();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(shortNumber(row[2]).c_str());
    ImGui::TableNextColumn();
    if (row.size() >= 5 && !row[3].empty()) ImGui::Text("%s .. %s", shortNumber(row[3]).c_str(), shortNumber(row[4]).c_str());
  }
  ImGui::EndTable();
  recordItem(ctx.shared, "scaling_runs_table");
}

// Save CSV and Save PNG into the folder typed (by default next to the sweep).
void drawExport(PanelContext& ctx, ScalingRunsView& v, const SweepView& view, const ScreenRect& plots) {
  if (v.exportFor != view.path) {
    v.exportFor = view.path;
    // A shipped sweep lives in the source tree: its export goes to the sweeps folder instead.
    std::string name = sweepName(v, view.path);
    name = name.substr(0, name.find(' '));
    v.exportDir = view.readOnly || view.path.empty() ? (sweepsRoot() / (name + "-export")).string() : (fs::path(view.path) / "export").string();
  }
  ImGui::SetNextItemWidth(-FLT_MIN);
  ImGui::InputTextWithHint("##scaling_export_dir", "folder to save into", &v.exportDir);
  recordItem(ctx.shared, "scaling_export_dir");
  ImGui::BeginDisabled(!view.results || v.exportDir.empty());
  if (ImGui::Button("Save CSV")) {
    try {
      fs::create_directories(v.exportDir);
      const std::string runs = (fs::path(v.exportDir) / "runs.csv").string(), fitsFile = (fs::path(v.exportDir) / "fits.csv").string();
      writeFileAtomically(runs, sweepRunsCsv(*view.results));
      if (view.fits) writeFileAtomically(fitsFile, fitsCsv(*view.fits));
      v.exportMessage = "wrote " + runs + (view.fits ? " and fits.csv" : " (no fits yet)");
      v.exportFailed = false;
    } catch (const std::exception& e) {
      v.exportMessage = e.what();
      v.exportFailed = true;
    }
  }
  recordItem(ctx.shared, "scaling_save_csv");
  ImGui::SameLine();
  if (ImGui::Button("Save PNG")) {
    std::error_code ec;
    fs::create_directories(v.exportDir, ec);
    v.pendingPng = (fs::path(v.exportDir) / "plots.png").string();
    ctx.screenshotPath = v.pendingPng;
    ctx.screenshotCrop = plots;
    v.exportMessage = "writing " + v.pendingPng;
    v.exportFailed = false;
  }
  recordItem(ctx.shared, "scaling_save_png");
  ImGui::EndDisabled();
  if (!v.pendingPng.empty() && ctx.screenshotPath.empty() && ctx.screenshotOutcome.find(v.pendingPng) != std::string::npos) {
    v.exportFailed = ctx.screenshotOutcome.rfind("saved ", 0) != 0;
    v.exportMessage = ctx.screenshotOutcome;
    v.pendingPng.clear();
  } else if (!v.pendingPng.empty() && ctx.screenshotPath.empty() && ctx.screenshotOutcome.rfind("saved ", 0) != 0 && !ctx.screenshotOutcome.empty()) {
    v.exportFailed = true;  // a PNG that could not be written: the error does not name the file
    v.exportMessage = ctx.screenshotOutcome;
    v.pendingPng.clear();
  }
  if (!v.exportMessage.empty()) {
    if (v.exportFailed) ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", v.exportMessage.c_str());
    if (v.exportFailed) ImGui::PopStyleColor();
  }
}

// The current run's loss at each step so far (the side column, while a sweep runs or is paused).
void drawCurrentLoss(PanelContext& ctx, const SweepView& view) {
  if (view.current.empty() || view.currentLoss.empty()) return;
  std::vector<double> steps(view.currentLoss.size()), loss(view.currentLoss.begin(), view.currentLoss.end());
  for (size_t i = 0; i < steps.size(); ++i) steps[i] = static_cast<double>(i + 1);
  const auto [lo, hi] = std::minmax_element(loss.begin(), loss.end());
  Plot plot("scaling_current_loss", ImVec2(0, ImGui::GetFontSize() * 9));
  plot.setTitle("this run: " + view.current);
  plot.setAxes(1, std::max<double>(2, view.steps), false, *lo * 0.95, *hi * 1.05, false, "step", "loss");
  plot.setLegend(LegendPlacement::Hidden);
  plot.line("training loss", steps, loss, ImGui::GetColorU32(ImGuiCol_PlotLines), 2.0f);
  plot.draw();
  recordItem(ctx.shared, "scaling_current_loss");
}

// The four plots in a 2 x 2 grid when the window is tall; else two at a time (a page chosen by
// radio buttons), side by side when wide, one above the other (scrolling) when not. Returns the
// screen rectangle of the plots drawn (Save PNG's crop).
ScreenRect drawPlots(PanelContext& ctx, ScalingRunsView& v, const SweepView& view, ImVec2 size, int* pointsDrawn) {
  const float font = ImGui::GetFontSize(), spacing = ImGui::GetStyle().ItemSpacing.x;
  const bool wide = size.x / 2 >= font * 18, grid = wide && size.y >= font * 30;
  if (!grid) {
    ImGui::RadioButton("loss vs N and D", &v.plotPage, 0);
    recordItem(ctx.shared, "scaling_page_laws");
    ImGui::SameLine();
    ImGui::RadioButton("compute and N_opt", &v.plotPage, 1);
    recordItem(ctx.shared, "scaling_page_compute");
    size.y -= ImGui::GetFrameHeightWithSpacing();
  }
  const ImVec2 cell = wide ? ImVec2((size.x - spacing) / 2, grid ? (size.y - spacing) / 2 : size.y) : ImVec2(size.x, std::max(font * 14, size.y));
  ImGui::BeginChild("scaling_runs_plots", size, false, wide ? ImGuiWindowFlags_NoScrollbar : 0);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  *pointsDrawn = view.results ? static_cast<int>(sweepPoints(*view.results).size()) : 0;
  if (grid || v.plotPage == 0) {
    drawPowerLawPlot(ctx, view, true, cell);
    if (wide) ImGui::SameLine();
    drawPowerLawPlot(ctx, view, false, cell);
  }
  if (grid || v.plotPage == 1) {
    drawComputePlot(ctx, view, v.isoFlop, cell);
    if (wide) ImGui::SameLine();
    drawOptimumPlot(ctx, view, cell);
  }
  const ImVec2 end = ImGui::GetItemRectMax();
  ImGui::EndChild();
  recordItem(ctx.shared, "scaling_runs_plots");
  return {origin.x, origin.y, std::max(end.x, origin.x + size.x), std::min(end.y, origin.y + size.y)};
}

void reportFacts(PanelContext& ctx, const ScalingRunsView& v, const SweepView& view, int pointsDrawn) {
  nlohmann::json& facts = ctx.shared.facts["scaling_runs"];
  facts["status"] = toString(view.status);
  facts["message"] = view.message;
  facts["path"] = view.path;
  facts["read_only"] = view.readOnly;
  facts["runs_done"] = view.runsDone;
  facts["runs"] = view.runs;
  facts["current"] = view.current;
  facts["step"] = view.step;
  facts["steps"] = view.steps;
  facts["active"] = view.active.size();
  facts["device"] = view.device;
  facts["train_open"] = ctx.shared.regions.count("scaling_start") > 0;
  facts["extend_error"] = v.extendError;
  facts["text_file"] = v.textFile;
  facts["spec_text_path"] = view.results ? view.results->spec.data.textPath : "";
  facts["points_drawn"] = pointsDrawn;
  facts["fitted"] = view.fits ? view.fits->hasChinchilla : false;
  facts["tokens_per_param"] = view.fits && view.fits->hasChinchilla ? view.fits->optimumAtSweep.tokensPerParam : 0.0;
  facts["export_dir"] = v.exportDir;
  facts["export_message"] = v.exportMessage;
  facts["export_failed"] = v.exportFailed;
  facts["shipped"] = v.shipped.size();
}

}  // namespace

void drawScalingRuns(PanelContext& ctx, ScalingRunsView& v) {
  if (!ctx.sweeps) return;
  const std::shared_ptr<const SweepView> latest = ctx.sweeps->latest();
  const SweepView& view = *latest;
  if (!v.scanned) {
    v.shipped = shippedSweeps();
    v.recent = recentSweeps();
    v.scanned = true;
  }
  if (!v.openedDefault) {  // real runs on screen at once: the user's newest sweep, else the shipped brown one (or the first)
    v.openedDefault = true;
    auto brown = std::find_if(v.shipped.begin(), v.shipped.end(), [](const auto& sweep) { return sweep.first == "brown"; });
    if (brown == v.shipped.end()) brown = v.shipped.begin();
    if (view.path.empty() && !v.recent.empty()) ctx.sweeps->open(v.recent.front());
    else if (view.path.empty() && brown != v.shipped.end()) ctx.sweeps->open(brown->second);
  }
  drawPicker(ctx, v, view);
  // Starting and extending sweeps, folded by default in a short window (a 720p projector) so the
  // plots keep their room; open in a tall one.
  ImGui::SetNextItemOpen(ImGui::GetContentRegionAvail().y >= ImGui::GetFontSize() * 36, ImGuiCond_Once);
  const bool train = ImGui::CollapsingHeader("Train a sweep: a preset on Brown or your text file, or more sizes and budgets");
  recordItem(ctx.shared, "scaling_train_header");
  if (train) {
    drawRunControls(ctx, v, view);
    drawDataAndExtend(ctx, v, view);
  }
  drawProgress(ctx, view);
  const float font = ImGui::GetFontSize(), spacing = ImGui::GetStyle().ItemSpacing.x;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float side = std::clamp(avail.x * 0.28f, font * 18, font * 26);
  int pointsDrawn = 0;
  const ScreenRect plots = drawPlots(ctx, v, view, ImVec2(avail.x - side - spacing, avail.y), &pointsDrawn);
  ImGui::SameLine();
  ImGui::BeginChild("scaling_runs_side", ImVec2(side, 0));  // down to the panel's bottom, beside the plots
  ImGui::Checkbox("compute plot: N on x (iso-FLOP)", &v.isoFlop);
  recordItem(ctx.shared, "scaling_isoflop_toggle");
  drawExport(ctx, v, view, plots);
  drawCurrentLoss(ctx, view);
  ImGui::Separator();
  drawConstants(ctx, view);
  ImGui::EndChild();
  reportFacts(ctx, v, view, pointsDrawn);
}

}  // namespace tscope::gui
