// The Compare view of the Training panel (training_compare.h). Files are read on the UI thread
// when opened (a comparison is a few hundred KB; loadComparison refuses anything over 64 MB); the
// curves are rebuilt every frame from the loaded data with the loss plot's own helpers
// (training_charts.h), so both views smooth and scale losses the same way.
#include "app/gui/panels/training/training_compare.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "app/gui/panels/training/training_charts.h"
#include "app/gui/widgets/plot.h"
#include "model/core/error.h"

namespace tscope::gui {

namespace {

const ImVec4 kErrorColour(0.9f, 0.3f, 0.25f, 1.0f);

std::vector<std::string> shippedComparisons() {
  std::vector<std::string> paths;
  const std::filesystem::path dir = std::filesystem::path(TSCOPE_SOURCE_DIR) / "assets" / "comparisons";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

void open(TrainingCompareView& v, const std::string& path) {
  v.path = path;
  try {
    v.comparison = loadComparison(path);
    v.loadedPath = path;
    v.error.clear();
  } catch (const Error& e) {
    v.error = e.what();  // the comparison on screen (if any) stays
  }
}

// "linformer (projected 64, pool)", "window (window 32)", "exact".
std::string attentionOf(const ModelConfig& model) {
  const AttentionVariantParams& a = model.attention_variant;
  std::string knobs;
  for (const AttentionKnob& knob : attentionKnobs())
    if (knob.variant == a.variant) knobs += (knobs.empty() ? "" : ", ") + std::string(knob.name) + " " + std::to_string(a.*knob.member);
  if (a.variant == AttentionVariant::Linformer) knobs += std::string(knobs.empty() ? "" : ", ") + linformerProjectionName(a.linformerProjection);
  if (a.variant == AttentionVariant::Exact && model.attention_window > 0) knobs = "window " + std::to_string(model.attention_window);
  const std::string name = attentionVariantName(a.variant);
  return knobs.empty() ? name : name + " (" + knobs + ")";
}

// What a run's model is, as short named descriptions (attention, norm, residual, feed-forward,
// depth, positions): the table shows the ones that vary between the runs.
std::vector<std::pair<const char*, std::string>> designOf(const ModelConfig& m) {
  std::string norm = m.hasNorm() ? std::string(m.pre_norm ? "pre-" : "post-") + toString(m.norm) : "none";
  std::string mlp = !m.hasFeedForward() ? "none"
                    : m.isMoe() ? std::to_string(m.n_experts) + " experts, top-" + std::to_string(m.moe_top_k) + ", F " + std::to_string(m.dFF())
                                : "dense, F " + std::to_string(m.dFF());
  return {{"attention", attentionOf(m)},           {"norm", norm},
          {"residual", m.residual ? "yes" : "no"}, {"feed-forward", mlp},
          {"layers", std::to_string(m.n_layer)},   {"positions", toString(m.position_encoding)}};
}

// Each run's designOf entries that are not the same in every run, "name value" joined by commas
// (the attention alone when the runs agree on everything).
std::vector<std::string> differences(const TrainingComparison& c) {
  std::vector<std::vector<std::pair<const char*, std::string>>> designs;
  for (const ComparedRun& run : c.runs) designs.push_back(designOf(run.config.model));
  std::vector<std::string> out(designs.size());
  if (designs.empty()) return out;
  for (size_t k = 0; k < designs.front().size(); ++k) {
    const bool varies = std::any_of(designs.begin(), designs.end(), [&](const auto& d) { return d[k].second != designs.front()[k].second; });
    if (!varies) continue;
    for (size_t i = 0; i < designs.size(); ++i)
      out[i] += (out[i].empty() ? "" : ", ") + std::string(designs[i][k].first) + " " + designs[i][k].second;
  }
  for (size_t i = 0; i < designs.size(); ++i)
    if (out[i].empty()) out[i] = "attention " + designs[i].front().second;
  return out;
}

void drawChooser(PanelContext& ctx, TrainingCompareView& v) {
  const float openWidth = ImGui::CalcTextSize("Open").x + ImGui::GetStyle().FramePadding.x * 2;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
  const std::string shown = v.shipped.empty() ? "(none shipped)" : "shipped comparisons";
  if (ImGui::BeginCombo("##compare_shipped", shown.c_str())) {
    for (const std::string& path : v.shipped) {
      const std::string stem = std::filesystem::path(path).stem().string();
      if (ImGui::Selectable(stem.c_str(), path == v.loadedPath)) open(v, path);
      recordItem(ctx.shared, "training_compare_shipped_" + stem);
    }
    ImGui::EndCombo();
  }
  recordItem(ctx.shared, "training_compare_shipped");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::GetContentRegionAvail().x - openWidth - ImGui::GetStyle().ItemSpacing.x));
  const bool entered = ImGui::InputTextWithHint("##compare_path", "path of a comparison file (tscope-cli compare --out)", &v.path,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
  recordItem(ctx.shared, "training_compare_path");
  ImGui::SameLine();
  const bool clicked = ImGui::Button("Open");
  recordItem(ctx.shared, "training_compare_open");
  if ((clicked || entered) && !v.path.empty()) open(v, v.path);
}

// The title on one line; what the runs are, where they ran and the command in its tooltip (the
// plot keeps the height a projector needs).
void drawHeader(const TrainingComparison& c) {
  ImGui::TextUnformatted(c.title.empty() ? "(untitled comparison)" : c.title.c_str());
  std::string where = c.machine;
  if (!c.date.empty()) where += (where.empty() ? "" : ", ") + c.date;
  if (c.description.empty() && where.empty() && c.command.empty()) return;
  ImGui::SameLine();
  ImGui::TextDisabled("(details)");
  if (!ImGui::IsItemHovered()) return;
  ImGui::BeginTooltip();
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36);
  if (!c.description.empty()) ImGui::TextWrapped("%s", c.description.c_str());
  if (!where.empty()) ImGui::TextWrapped("Trained on %s", where.c_str());
  if (!c.command.empty()) ImGui::TextWrapped("%s", c.command.c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndTooltip();
}

int drawLossPlot(PanelContext& ctx, const TrainingCompareView& v, ImVec2 size) {
  Plot plot("training_compare_plot", size);
  plot.setTitle("Validation loss (lighter: training loss, running mean)");
  const int n = v.comparison ? static_cast<int>(v.comparison->runs.size()) : 0;
  std::vector<std::vector<double>> valX(n), valY(n), trainX(n), trainY(n);
  std::vector<const std::vector<double>*> curves;
  double xMax = 1;
  int drawn = 0;
  for (int i = 0; i < n; ++i) {
    const ComparedRun& run = v.comparison->runs[i];
    valX[i].assign(run.evalSteps.begin(), run.evalSteps.end());
    valY[i].assign(run.valLoss.begin(), run.valLoss.end());
    if (v.showTrain) runningMeanCurve(run.trainLoss, trainX[i], trainY[i]);
    curves.push_back(&valY[i]);
    curves.push_back(&trainY[i]);
    xMax = std::max(xMax, static_cast<double>(run.trainLoss.size()));
  }
  if (v.zoomEnd && n > 0) {
    // The first steps fall from ln V; the runs differ by hundredths of a nat at the end: a linear
    // y range over the last 80% of the steps shows that difference.
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; ++i)
      for (const auto& [xs, ys] : {std::pair{&valX[i], &valY[i]}, std::pair{&trainX[i], &trainY[i]}})
        for (size_t j = 0; j < xs->size(); ++j)
          if ((*xs)[j] >= 0.2 * xMax && std::isfinite((*ys)[j])) {
            lo = std::min(lo, (*ys)[j]);
            hi = std::max(hi, (*ys)[j]);
          }
    if (!(lo < hi)) lo = hi = std::isfinite(lo) ? lo : 1;
    const double margin = std::max(0.05 * (hi - lo), 1e-3);
    plot.setAxes(0, xMax, false, lo - margin, hi + margin, false, "step", "nats per token");
  } else {
    setLossAxes(plot, xMax, curves, NAN);
  }
  for (int i = 0; i < n; ++i) {
    const std::string& label = v.comparison->runs[i].label;
    if (v.showTrain) plot.line(label + " train", trainX[i], trainY[i], categoryColour(i, n, 0.35f), 1.2f, false);
    plot.line(label, valX[i], valY[i], categoryColour(i, n), 2.5f);
    drawn += valX[i].empty() ? 0 : 1;
  }
  if (n == 0) plot.note(xMax / 2, 1, "open a comparison file above", ImGui::GetColorU32(ImGuiCol_TextDisabled));
  plot.setLegend(LegendPlacement::Above);  // rows above the plot: the curves' ends are where the runs differ
  plot.draw();
  recordItem(ctx.shared, "training_compare_plot");
  return drawn;
}

std::string minutes(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", seconds / 60);
  return text;
}

void drawTable(PanelContext& ctx, const TrainingComparison& c) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable("training_compare_table", 8, flags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  const std::vector<std::string> differs = differences(c);
  for (const char* column : {"run", "name", "differs", "parameters", "final val", "best val", "tokens/s", "minutes"})
    ImGui::TableSetupColumn(column, std::string(column) == "name" ? ImGuiTableColumnFlags_WidthStretch : ImGuiTableColumnFlags_None);
  ImGui::TableHeadersRow();
  const int n = static_cast<int>(c.runs.size());
  for (int i = 0; i < n; ++i) {
    const ComparedRun& run = c.runs[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(categoryColour(i, n)), "%s", run.label.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(run.name.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("data: %s", run.data.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(differs[i].c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(static_cast<double>(run.parameters)).c_str());
    ImGui::TableNextColumn();
    if (run.valLoss.empty()) ImGui::TextDisabled("-");
    else ImGui::Text("%.3f", run.valLoss.back());
    ImGui::TableNextColumn();
    if (run.valLoss.empty()) ImGui::TextDisabled("-");
    else ImGui::Text("%.3f", *std::min_element(run.valLoss.begin(), run.valLoss.end()));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(formatCount(run.tokensPerSecond).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(minutes(run.seconds).c_str());
  }
  ImGui::EndTable();
  recordItem(ctx.shared, "training_compare_table");
}

}  // namespace

void drawTrainingCompare(PanelContext& ctx, TrainingCompareView& v) {
  if (!v.scanned) {
    v.shipped = shippedComparisons();
    v.scanned = true;
    // Real runs on screen at once: the first shipped comparison opens by itself.
    if (v.loadedPath.empty() && !v.shipped.empty()) open(v, v.shipped.front());
  }
  drawChooser(ctx, v);
  if (!v.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", v.error.c_str());
    ImGui::PopStyleColor();
  }
  if (v.comparison) drawHeader(*v.comparison);
  ImGui::Checkbox("training loss too", &v.showTrain);
  ImGui::SameLine();
  ImGui::Checkbox("zoom on the last 80% of the steps", &v.zoomEnd);
  const float line = ImGui::GetFrameHeightWithSpacing();
  const int runs = v.comparison ? static_cast<int>(v.comparison->runs.size()) : 0;
  const float avail = ImGui::GetContentRegionAvail().y;
  const float tableHeight = runs > 0 ? std::min(line * (runs + 1.5f), avail * 0.4f) : 0;
  const int drawn = drawLossPlot(ctx, v, ImVec2(0, std::max(ImGui::GetFontSize() * 10, avail - tableHeight)));
  if (v.comparison) drawTable(ctx, *v.comparison);

  nlohmann::json& facts = ctx.shared.facts["training_compare"];
  facts["file"] = v.loadedPath;
  facts["error"] = v.error;
  facts["shipped"] = v.shipped.size();
  facts["runs"] = runs;
  facts["runs_drawn"] = drawn;
  facts["zoom_end"] = v.zoomEnd;
  facts["labels"] = nlohmann::json::array();
  if (v.comparison)
    for (const ComparedRun& run : v.comparison->runs) facts["labels"].push_back(run.label);
  facts["title"] = v.comparison ? v.comparison->title : "";
  facts["differs"] = v.comparison ? differences(*v.comparison) : std::vector<std::string>{};
}

}  // namespace tscope::gui
