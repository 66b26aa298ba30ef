// The kernel-regression example beside the Inside panel's flow (kernel_regression_view.h): the
// plot is ours (widgets/plot.h); the numbers come from model/nn/kernel_regression.h.
#include "app/gui/widgets/kernel_regression_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/widgets/bar_chart.h"
#include "app/gui/widgets/plot.h"
#include "model/nn/kernel_regression.h"

namespace tscope::gui {

namespace {
constexpr float kXMin = -3, kXMax = 3, kYMin = -2, kYMax = 2;
constexpr const char* kPresets[] = {"a smooth curve", "a step", "two clusters"};
}  // namespace

KernelRegressionView::KernelRegressionView() { preset(0); }

void KernelRegressionView::preset(int which) {
  preset_ = which;
  if (which == 0) {
    xs_ = {-2.5f, -1.5f, -0.6f, 0.2f, 1.1f, 2.0f, 2.7f};
    ys_.clear();
    for (float x : xs_) ys_.push_back(std::sin(1.3f * x));
  } else if (which == 1) {
    xs_ = {-2.4f, -1.6f, -0.8f, -0.2f, 0.4f, 1.2f, 2.2f};
    ys_ = {-1, -1, -1, -1, 1, 1, 1};
  } else {
    xs_ = {-2.2f, -1.9f, -1.6f, 1.4f, 1.8f, 2.3f};
    ys_ = {1.2f, 1.5f, 1.0f, -1.0f, -1.4f, -0.8f};
  }
}

void KernelRegressionView::draw(SharedView& shared, float width) {
  ImGui::TextWrapped(
      "A query x looks up values y_i by how close it is to each x_i: the weights are a softmax of -(x - x_i)² / (2 sigma²), "
      "the estimate their weighted sum. A head does the same with softmax(q·k_j / sqrt(D)) over the v_j.");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  if (ImGui::BeginCombo("points", kPresets[preset_])) {
    for (int i = 0; i < 3; ++i)
      if (ImGui::Selectable(kPresets[i], i == preset_)) preset(i);
    ImGui::EndCombo();
  }
  recordItem(shared, "kernel_preset");
  sameLineIfFits("sigma", ImGui::GetFontSize() * 7);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  ImGui::SliderFloat("sigma", &sigma_, 0.05f, 3.0f, "%.2f", ImGuiSliderFlags_Logarithmic);
  recordItem(shared, "kernel_sigma");
  const KernelEstimate at = kernelRegression(query_, xs_, ys_, sigma_);
  estimate_ = at.estimate;
  // The estimate as a curve over x, by the same function.
  std::vector<double> gridX, gridY;
  for (int i = 0; i <= 120; ++i) {
    const float x = kXMin + (kXMax - kXMin) * i / 120.0f;
    gridX.push_back(x);
    gridY.push_back(kernelRegression(x, xs_, ys_, sigma_).estimate);
  }
  Plot plot("kernel_regression", ImVec2(width, std::max(ImGui::GetFontSize() * 12, width * 0.55f)));
  plot.setAxes(kXMin, kXMax, false, kYMin, kYMax, false, "x", "y");
  plot.setLegend(LegendPlacement::Hidden);
  plot.line("estimate", gridX, gridY, IM_COL32(90, 160, 255, 255), 2.0f);
  for (size_t i = 0; i < xs_.size(); ++i) {
    char label[32];
    std::snprintf(label, sizeof label, "w=%.2f", at.weights[i]);
    plot.point(at.weights[i] >= 0.05f ? label : "", xs_[i], ys_[i], IM_COL32(255, 190, 60, 255));
  }
  plot.vline(query_, "query x", IM_COL32(255, 90, 90, 255));
  plot.point("estimate", query_, estimate_, IM_COL32(255, 90, 90, 255), LabelSide::BelowRight);
  const PlotHover hover = plot.draw();
  recordItem(shared, "kernel_plot");
  if (hover.clicked) {
    dragging_ = -1;  // the query, unless the press is on a point
    for (size_t i = 0; i < xs_.size(); ++i)
      if (std::abs(hover.x - xs_[i]) < 0.15 && std::abs(hover.y - ys_[i]) < 0.25) dragging_ = (int)i;
  }
  if (hover.held && dragging_ == -1) query_ = std::clamp((float)hover.x, kXMin, kXMax);
  if (hover.held && dragging_ >= 0) {
    xs_[dragging_] = std::clamp((float)hover.x, kXMin, kXMax);
    ys_[dragging_] = std::clamp((float)hover.y, kYMin, kYMax);
  }
  if (!ImGui::IsMouseDown(0)) dragging_ = -2;
  ImGui::Text("estimate at x = %.2f: sum_i w_i y_i = %.4f", query_, estimate_);
  for (size_t i = 0; i < xs_.size(); ++i) {
    char label[64];
    std::snprintf(label, sizeof label, "w_%zu = %.3f  (x %.2f, y %.2f)", i, at.weights[i], xs_[i], ys_[i]);
    drawBar(at.weights[i], 1.0f, width, BarStyle::Normal, label);
  }
  shared.facts["kernel"] = {{"query", query_}, {"estimate", estimate_}, {"sigma", sigma_}};
  drawBridge(shared, width);
}

// The step from the Gaussian kernel to the dot product: the points' x as angles, each key the unit
// vector at its angle (or scaled by 1 + y/2: unequal norms), the query the unit vector at x.
void KernelRegressionView::drawBridge(SharedView& shared, float width) {
  ImGui::Spacing();
  ImGui::TextWrapped(
      "From the kernel to the dot product: -|q - k|² / (2 sigma²) = q·k / sigma² - |q|² / (2 sigma²) - |k|² / (2 sigma²). The |q|² term is the "
      "same for every key and cancels in the softmax; when every key has the same norm the |k|² term cancels too, and the Gaussian weights "
      "are softmax(q·k / sigma²): attention, with 1/sqrt(D) for 1/sigma². Here each x is an angle, its key the vector at that angle, the "
      "query the unit vector at the query's angle.");
  ImGui::Checkbox("keys of unequal norm (1 + y/2)", &unequalNorms_);
  recordItem(shared, "kernel_unequal_norms");
  const float query[2] = {std::cos(query_), std::sin(query_)};
  std::vector<float> keys;
  for (size_t i = 0; i < xs_.size(); ++i) {
    const float r = unequalNorms_ ? 1.0f + 0.5f * ys_[i] : 1.0f;
    keys.push_back(r * std::cos(xs_[i]));
    keys.push_back(r * std::sin(xs_[i]));
  }
  const KernelBridge bridge = kernelToDotProduct(query, keys, 2, sigma_);
  for (size_t i = 0; i < xs_.size(); ++i) {
    char label[80];
    std::snprintf(label, sizeof label, "key %zu: Gaussian %.3f   softmax(q·k/sigma²) %.3f", i, bridge.gaussian[i], bridge.dot[i]);
    drawBar(bridge.dot[i], 1.0f, width, BarStyle::Normal, label);
  }
  ImGui::Text("largest difference: %.6f%s", bridge.maxDifference,
              unequalNorms_ ? "  (the |k|² terms no longer cancel)" : "  (equal norms: the same weights)");
  shared.facts["kernel"]["bridge"] = {
      {"unequal_norms", unequalNorms_}, {"gaussian", bridge.gaussian}, {"dot", bridge.dot}, {"max_difference", bridge.maxDifference}};
}

}  // namespace tscope::gui
