// The Training panel's charts (see training_charts.h). Curves are rebuilt every frame from the
// published view (long runs are averaged into at most kMaxPoints points); the attention textures
// only when the shown snapshot, layer or head change. Clicking a curve jumps the timeline there.
#include "app/gui/panels/training/training_charts.h"
#include "model/nn/trace_views.h"

#include <imgui.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <limits>

#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/column_chart.h"
#include "model/train/optimizer.h"
#include "model/train/train_presets.h"
#include "app/gui/widgets/plot.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kTrainColour = IM_COL32(80, 145, 235, 255);
constexpr ImU32 kTrainRawColour = IM_COL32(80, 145, 235, 80);
constexpr ImU32 kValColour = IM_COL32(240, 150, 40, 255);
constexpr ImU32 kLrColour = IM_COL32(100, 185, 100, 255);
constexpr ImU32 kPlannedColour = IM_COL32(140, 140, 140, 160);
constexpr ImU32 kMarkerColour = IM_COL32(230, 70, 70, 230);
constexpr size_t kMaxPoints = 800;  // a curve's points at most (long runs are averaged)

// The timeline entry nearest `step`.
int nearestSnapshot(const TrainingView& view, double step) {
  int best = 0;
  for (int i = 0; i < static_cast<int>(view.timeline.size()); ++i)
    if (std::abs(view.timeline[i]->step - step) < std::abs(view.timeline[best]->step - step)) best = i;
  return best;
}

}  // namespace

void runningMeanCurve(const std::vector<float>& loss, std::vector<double>& xs, std::vector<double>& ys) {
  bucketMeans(trailingMean(loss, std::max<size_t>(5, loss.size() / 40)), kMaxPoints, xs, ys);
}

void setLossAxes(Plot& plot, double xMax, const std::vector<const std::vector<double>*>& curves, double include) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto take = [&](double y) {
    if (!std::isfinite(y) || y <= 0) return;
    lo = std::min(lo, y);
    hi = std::max(hi, y);
  };
  take(include);
  for (const auto* ys : curves)
    for (double y : *ys) take(y);
  if (!(lo <= hi)) lo = hi = 1;  // nothing to show yet
  plot.setAxes(0, std::max(1.0, xMax), false, lo * 0.8, hi * 1.15, true, "step", "nats per token (log scale)");
}

namespace {

void drawLossPlot(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view, const ModelConfig& model, ImVec2 size) {
  Plot plot("training_loss", size);
  plot.setTitle("Loss");
  std::vector<double> rawX, rawY, meanX, meanY, valX, valY;
  std::vector<double> raw(view.trainLoss.begin(), view.trainLoss.end());
  bucketMeans(raw, kMaxPoints, rawX, rawY);
  runningMeanCurve(view.trainLoss, meanX, meanY);
  for (size_t i = 0; i < view.valLoss.size(); ++i) {
    valX.push_back(view.evalSteps[i]);
    valY.push_back(view.valLoss[i]);
  }
  const double uniform = std::log(std::max(2, model.vocab_size));
  setLossAxes(plot, std::max(1, view.totalSteps > 0 ? view.totalSteps : v.config.maxSteps), {&rawY, &valY}, uniform);
  plot.line("train (each step)", rawX, rawY, kTrainRawColour, 1.0f);
  plot.line("train (running mean)", meanX, meanY, kTrainColour, 2.0f);
  plot.line("validation", valX, valY, kValColour, 2.5f);
  const double xMax = std::max(1, view.totalSteps > 0 ? view.totalSteps : v.config.maxSteps);
  plot.line("ln V (a uniform guess)", {0.0, xMax}, {uniform, uniform}, kPlannedColour, 1.5f);
  if (v.snapshot >= 0 && v.snapshot < static_cast<int>(view.timeline.size())) plot.vline(view.timeline[v.snapshot]->step, "", kMarkerColour);
  plot.setLegend(LegendPlacement::TopRight);
  const PlotHover hover = plot.draw();
  recordItem(ctx.shared, "training_loss");
  if ((hover.clicked || hover.held) && !view.timeline.empty()) {
    v.snapshot = nearestSnapshot(view, hover.x);
    v.followLatest = false;
  }
}

void drawLrPlot(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view, const TrainConfig& config, ImVec2 size) {
  Plot plot("training_lr", size);
  plot.setTitle("Learning rate");
  const LrSchedule schedule{config.maxLr, config.minLr, std::min(config.warmupSteps, config.maxSteps), std::max(1, config.maxSteps)};
  std::vector<double> plannedX, plannedY, doneX, doneY;
  const int total = std::max(1, config.maxSteps), stride = std::max(1, total / 400);
  try {
    for (int s = 0; s < total; s += stride) {
      plannedX.push_back(s + 1);
      plannedY.push_back(schedule.at(s));
    }
  } catch (const std::exception&) {
    plannedX.clear();  // an invalid edit: no plan to show
    plannedY.clear();
  }
  std::vector<double> lr(view.learningRate.begin(), view.learningRate.end());
  bucketMeans(lr, kMaxPoints, doneX, doneY);
  plot.setAxes(0, total, false, 0, std::max(1e-9, static_cast<double>(config.maxLr)) * 1.15, false, "step", "");
  plot.setFormats(formatGeneral, formatScientific);
  plot.line("planned", plannedX, plannedY, kPlannedColour, 1.5f);
  plot.line("done", doneX, doneY, kLrColour, 2.5f);
  if (v.snapshot >= 0 && v.snapshot < static_cast<int>(view.timeline.size())) plot.vline(view.timeline[v.snapshot]->step, "", kMarkerColour);
  plot.setLegend(LegendPlacement::TopRight);
  plot.draw();
  recordItem(ctx.shared, "training_lr");
}

void buildTextures(PanelContext& ctx, TrainingPanelView& v, const std::shared_ptr<const TrainingSnapshot>& s, const ModelConfig& model) {
  if (v.builtFor == s && v.builtLayer == v.layer && v.builtHead == v.head) return;
  const auto m = probabilitiesShown(s->attnMap(v.layer, v.head), s->T, model);
  v.attention.setData(ctx.renderer, m.data(), s->T, s->T, 0.0f, 1.0f, Colormap::Perceptual);
  if (v.builtFor != s) {
    v.thumbnails.resize((size_t)s->L * s->H);
    for (int l = 0; l < s->L; ++l)
      for (int h = 0; h < s->H; ++h) {
        const auto t = probabilitiesShown(s->attnMap(l, h), s->T, model);
        v.thumbnails[(size_t)l * s->H + h].setData(ctx.renderer, t.data(), s->T, s->T, 0.0f, 1.0f, Colormap::Perceptual);
      }
  }
  v.builtFor = s;
  v.builtLayer = v.layer;
  v.builtHead = v.head;
}

// The selected head, large, with the probe's tokens beside the rows and under the columns (their
// positions when the tokens do not fit side by side).
void drawAttention(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view, const TrainingSnapshot& s, float side) {
  ImGui::Text("Layer %d, head %d at step %d", v.layer, v.head, s.step);
  std::vector<std::string> labels, columns;  // columns: short tokens without their quotes
  for (int t = 0; t < s.T; ++t) {
    labels.push_back(tokenLabel(t < (int)view.probeTokens.size() ? view.probeTokens[t] : "?", 6));
    const std::string& label = labels.back();
    const bool quoted = label.size() >= 3 && label.front() == '\'' && label.back() == '\'' && label[1] != ' ' && label[label.size() - 2] != ' ';
    columns.push_back(quoted ? label.substr(1, label.size() - 2) : label);
  }
  TokenHeatmapStyle style{.rowLabels = &labels,
                          .labelWidth = ImGui::GetFontSize() * 5,
                          .colLabels = &columns,
                          .colIndicesWhenNarrow = true,
                          .shared = &ctx.shared,
                          .region = "training_attention",
                          .scale = ScalePlace::Right};
  style.readout = [&](int row, int col) {
    const float p = v.attention.value(row, col);
    char line[48];
    std::snprintf(line, sizeof line, "probability %.4f", p);
    return "query " + std::to_string(row) + " " + labels[row] + " -> key " + std::to_string(col) + " " + labels[col] + "\n" +
           (std::isnan(p) ? std::string("masked: a token cannot attend to later tokens") : std::string(line));
  };
  v.attention.draw(ctx.renderer, ImVec2(side / s.T, side / s.T), style);
  const float* map = s.attnMap(v.layer, v.head);
  ctx.shared.exportable = {"training_attention_step" + std::to_string(s.step) + "_l" + std::to_string(v.layer) + "_h" + std::to_string(v.head),
                           std::vector<float>(map, map + (size_t)s.T * s.T), s.T, s.T};
}

// Every head of the snapshot as a thumbnail; a click shows it large.
void drawHeadGrid(PanelContext& ctx, TrainingPanelView& v, const TrainingSnapshot& s, ImVec2 area) {
  ImGui::TextUnformatted("Every head (click to enlarge)");
  const float labelWidth = ImGui::CalcTextSize("layer 00").x + ImGui::GetStyle().ItemSpacing.x;
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float cell = std::clamp(std::min((area.x - labelWidth) / s.H - spacing, (area.y - line * 2) / s.L - line - spacing), ImGui::GetFontSize() * 2,
                                ImGui::GetFontSize() * 12);
  const ImVec2 start = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int l = 0; l < s.L; ++l) {
    const float y = start.y + l * (cell + line + spacing);
    draw->AddText(ImVec2(start.x, y + line + cell * 0.5f - line * 0.5f), ImGui::GetColorU32(ImGuiCol_Text), ("layer " + std::to_string(l)).c_str());
    for (int h = 0; h < s.H; ++h) {
      const float x = start.x + labelWidth + h * (cell + spacing);
      const std::string label = (cell >= ImGui::CalcTextSize("head 00").x ? "head " : "h") + std::to_string(h);
      if (l == 0) draw->AddText(ImVec2(x, y), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
      ImGui::SetCursorScreenPos(ImVec2(x, y + line));
      ImGui::PushID(l * s.H + h);
      int row, col;
      v.thumbnails[(size_t)l * s.H + h].draw(ImVec2(cell, cell), &row, &col);
      if (ImGui::IsItemClicked()) {
        v.layer = l;
        v.head = h;
      }
      if (l == v.layer && h == v.head)
        draw->AddRect(ImVec2(x - 1, y + line - 1), ImVec2(x + cell + 1, y + line + cell + 1), kMarkerColour, 0, 0, 3.0f);
      ImGui::PopID();
    }
  }
  ImGui::SetCursorScreenPos(start);
  const ImVec2 size(labelWidth + s.H * (cell + spacing), s.L * (cell + line + spacing));
  ImGui::Dummy(size);
  ctx.shared.regions["training_heads"] = {start.x, start.y, start.x + size.x, start.y + size.y};
}

// Share of the probe's routed assignments per expert, one chart per layer, side by side when
// they fit, else in rows.
void drawExpertLoad(const TrainingSnapshot& s, ImVec2 area) {
  const int E = s.experts;
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  const int perRow = std::clamp(static_cast<int>((area.x + spacing) / (ImGui::GetFontSize() * 15)), 1, s.L);
  const int rows = (s.L + perRow - 1) / perRow;
  const float width = (area.x - spacing * (perRow - 1)) / perRow;
  const float height = std::max(ImGui::GetTextLineHeight() * 7, area.y / rows - ImGui::GetStyle().ItemSpacing.y);
  for (int l = 0; l < s.L; ++l) {
    if (l % perRow != 0) ImGui::SameLine();
    ColumnChart chart;
    chart.title = "Layer " + std::to_string(l) + ": share routed to each expert";
    std::vector<float> load(s.expertLoad.begin() + (size_t)l * E, s.expertLoad.begin() + (size_t)(l + 1) * E);
    float top = 1.0f / E;
    for (float f : load) top = std::max(top, f);
    chart.series = {{"f_i", load, kTrainColour}};
    chart.yMax = std::min(1.0f, std::ceil(top * 10.0f) / 10.0f);
    chart.reference = 1.0f / E;
    chart.referenceLabel = "uniform 1/E";
    chart.categoryLabel = "expert";
    drawColumnChart(chart, ImVec2(width, height));
  }
}

void drawTimeline(TrainingPanelView& v, const TrainingView& view) {
  const int n = static_cast<int>(view.timeline.size());
  if (v.followLatest || v.snapshot >= n) v.snapshot = n - 1;
  v.snapshot = std::max(0, v.snapshot);
  const TrainingSnapshot& s = *view.timeline[v.snapshot];
  ImGui::TextUnformatted("timeline");
  ImGui::SameLine();
  const float checkbox = ImGui::CalcTextSize("follow latest").x + ImGui::GetFrameHeight() * 2;
  ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::GetContentRegionAvail().x - checkbox));
  const std::string format = "step " + std::to_string(s.step) + "  (snapshot " + std::to_string(v.snapshot + 1) + " of " + std::to_string(n) + ")";
  if (ImGui::SliderInt("##timeline", &v.snapshot, 0, n - 1, format.c_str(), ImGuiSliderFlags_AlwaysClamp)) v.followLatest = false;
  ImGui::SameLine();
  ImGui::Checkbox("follow latest", &v.followLatest);
  layerHeadSliders(nullptr, {.widthEms = 7}, v.layer, s.L, v.head, s.H);
  ImGui::SameLine();
  char losses[192];
  std::snprintf(losses, sizeof losses, "   at step %d: train loss %.3f, validation loss %.3f", s.step, s.trainLoss, s.valLoss);
  if (s.accuracy >= 0)
    std::snprintf(losses + std::strlen(losses), sizeof losses - std::strlen(losses),
                  view.config.model.isImage() ? ", test accuracy %.1f%%" : ", masked-token accuracy %.1f%%", 100 * s.accuracy);
  ImGui::TextUnformatted(s.step == 0 ? "   at step 0: the untrained model" : losses);
}

}  // namespace

void drawTrainingCharts(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view) {
  const bool started = view.status != TrainingStatus::Idle && view.status != TrainingStatus::Preparing && view.config.maxSteps > 0;
  const TrainConfig& config = started ? view.config : v.config;
  const ModelConfig model = started ? view.config.model : v.problem.empty() ? resolvedModelConfig(v.config, v.data) : v.config.model;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float fontSize = ImGui::GetFontSize();
  const float curvesHeight = std::clamp(avail.y * 0.34f, fontSize * 12, fontSize * 22);
  drawLossPlot(ctx, v, view, model, ImVec2(avail.x * 0.64f, curvesHeight));
  ImGui::SameLine();
  drawLrPlot(ctx, v, view, config, ImVec2(0, curvesHeight));
  if (view.timeline.empty()) {
    ImGui::TextDisabled("The timeline fills in as the model trains: a snapshot of the attention on the probe sequence every 1%% of the steps.");
    return;
  }
  drawTimeline(v, view);
  const std::shared_ptr<const TrainingSnapshot>& s = view.timeline[v.snapshot];
  v.layer = std::clamp(v.layer, 0, s->L - 1);
  v.head = std::clamp(v.head, 0, s->H - 1);
  if (s->T == 0 || s->attention.empty()) return;
  buildTextures(ctx, v, s, view.config.model);
  const ImVec2 area = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const bool moe = s->experts > 0;
  const float labelWidth = fontSize * 5, scaleWidth = fontSize * 4.5f;
  const float side = std::max(fontSize * 6, std::min(area.y - line * 2.5f, area.x * 0.5f - labelWidth - scaleWidth));
  ImGui::BeginGroup();
  drawAttention(ctx, v, view, *s, side);
  ImGui::EndGroup();
  // The right column (below when the window is narrow for its text size): every head, the
  // expert load (MoE), and how to read the maps.
  ImGui::SameLine(0, fontSize * 1.5f);
  if (ImGui::GetContentRegionAvail().x < fontSize * 14) ImGui::NewLine();
  ImGui::BeginGroup();
  const float rightWidth = ImGui::GetContentRegionAvail().x;
  const float rightHeight = std::max(ImGui::GetContentRegionAvail().y, fontSize * 20);
  drawHeadGrid(ctx, v, *s, ImVec2(rightWidth, moe ? rightHeight * 0.4f : rightHeight - line * 4));
  if (moe) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + rightWidth);
    ImGui::TextDisabled("Expert load on the probe sequence (f_i of the load-balancing loss):");
    ImGui::PopTextWrapPos();
    drawExpertLoad(*s, ImVec2(rightWidth, std::max(ImGui::GetContentRegionAvail().y - line * 0.5f, fontSize * 10)));
  }
  if (ImGui::GetContentRegionAvail().y > line * 4) {
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + rightWidth);
    ImGui::TextDisabled(
        "Each row is a query position, each column the key it attends to; grey: masked (a token cannot see later ones). A "
        "bright line just below the diagonal is a previous-token head. Drag the timeline, or click the loss curve, to "
        "see when a pattern appears; the red line marks the snapshot shown.");
    ImGui::PopTextWrapPos();
  }
  ImGui::EndGroup();
}

}  // namespace tscope::gui
