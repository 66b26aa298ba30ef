// Positional encodings panel: one tab per scheme (sinusoidal, the loaded model's learned table,
// RoPE, ALiBi), the model's own scheme marked and opened first. Every matrix comes from
// model/nn/positional.h; textures are rebuilt only when a knob they depend on changes.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "app/gui/panels/panels.h"
#include "model/nn/positional.h"
#include "app/gui/widgets/bar_chart.h"  // sameLineIfFits
#include "app/gui/widgets/figure.h"
#include "app/gui/panels/positional/panel_positional.h"
#include "app/gui/panels/positional/positional_tabs.h"

namespace tscope::gui {

float maxAbs(const std::vector<float>& values) {
  float m = 0;
  for (float v : values)
    if (std::isfinite(v)) m = std::max(m, std::abs(v));
  return m > 0 ? m : 1.0f;
}

namespace {}  // namespace

const char* positionSchemeName(PositionEncoding p) {
  switch (p) {
    case PositionEncoding::Learned: return "a learned position table";
    case PositionEncoding::Sinusoidal: return "sinusoidal positions";
    case PositionEncoding::Rope: return "RoPE";
    case PositionEncoding::Alibi: return "ALiBi";
    case PositionEncoding::None: return "no position encoding";
  }
  return "";
}

void publishFigures(PanelContext& ctx, const FigureHover& layout, const std::string& name, const Heatmap& exported, int figures) {
  for (int i = 0; i < figures; ++i) {
    const ImVec2 o = layout.plotOrigin[i];
    ctx.shared.regions["positional_" + name + (i ? "_similarity" : "")] = {o.x, o.y, o.x + layout.plotSide, o.y + layout.plotSide};
  }
  ExportableMatrix matrix{"positional_" + name, {}, exported.rows(), exported.cols()};
  matrix.values.reserve(static_cast<size_t>(matrix.rows) * matrix.cols);
  for (int r = 0; r < matrix.rows; ++r)
    for (int c = 0; c < matrix.cols; ++c) matrix.values.push_back(exported.value(r, c));
  ctx.shared.exportable = std::move(matrix);
}

namespace {

const char* schemeDescription(PositionEncoding p) {
  switch (p) {
    case PositionEncoding::Learned: return "row t of a trained table is added to the embedding of the token at position t (GPT-2)";
    case PositionEncoding::Sinusoidal: return "fixed sinusoids are added to the token embeddings (Vaswani et al. 2017)";
    case PositionEncoding::Rope: return "q and k are rotated by a position-dependent angle in every head (Su et al. 2021)";
    case PositionEncoding::Alibi: return "each head subtracts a slope times the distance from its attention scores (Press et al. 2022)";
    case PositionEncoding::None: return "the causal mask is the only cue to word order";
  }
  return "";
}

void initializeKnobs(PositionalView& v, const ModelConfig& c) {
  v.sinBase = static_cast<float>(c.position_base);
  v.sinDim = std::clamp(c.n_embd - c.n_embd % 2, 8, 512);
  v.sinPositions = std::min(128, c.n_positions);
  v.learnedPositions = v.learnedDraft = std::min(128, c.n_positions);
  v.ropeBase = static_cast<float>(c.position_base);
  v.ropeHeadDim = c.headDim() % 2 == 0 ? std::clamp(c.headDim(), 8, 256) : 64;
  v.ropePositions = std::min(64, c.n_positions);
  v.alibiPositions = std::min(24, c.n_positions);
  v.alibiCausal = c.causal;
  v.initialized = true;
}

// ---- Sinusoidal ---------------------------------------------------------------------------

void drawSinusoidalTab(PanelContext& ctx, PositionalView& v) {
  const float knobWidth = ImGui::GetFontSize() * 10;
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderFloat("base C", &v.sinBase, 10.0f, 1e6f, "%.0f", ImGuiSliderFlags_Logarithmic);
  sameLineIfFits(knobWidth + ImGui::GetFontSize() * 9);
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderInt("d (width, even)", &v.sinDim, 8, 512);
  v.sinDim = std::clamp(v.sinDim - v.sinDim % 2, 8, 512);
  sameLineIfFits(knobWidth + ImGui::GetFontSize() * 9);
  ImGui::SetNextItemWidth(knobWidth);
  ImGui::SliderInt("positions shown", &v.sinPositions, 8, 256);
  v.sinBase = std::clamp(v.sinBase, 10.0f, 1e6f);
  v.sinPositions = std::clamp(v.sinPositions, 8, 256);
  if (v.builtSinBase != v.sinBase || v.builtSinDim != v.sinDim || v.builtSinPositions != v.sinPositions) {
    const int T = v.sinPositions, d = v.sinDim;
    const auto encoding = sinusoidalEncoding(T, d, v.sinBase);
    v.sinusoid.setData(ctx.renderer, encoding.data(), T, d, -1.0f, 1.0f, Colormap::Diverging);
    const auto similarity = rowSimilarity(encoding.data(), T, d);
    v.sinSimilarityMax = maxAbs(similarity);
    v.sinusoidSimilarity.setData(ctx.renderer, similarity.data(), T, T, -v.sinSimilarityMax, v.sinSimilarityMax, Colormap::Diverging);
    const auto angles = ropeAngles(2, d, v.sinBase);  // row t = 1 holds each pair's frequency
    v.sinFrequencies.assign(angles.begin() + d / 2, angles.end());
    v.builtSinBase = v.sinBase;
    v.builtSinDim = v.sinDim;
    v.builtSinPositions = v.sinPositions;
  }
  ImGui::TextWrapped(
      "PE(t, 2i) = sin(t / C^(2i/d)),  PE(t, 2i+1) = cos(t / C^(2i/d)).  Left columns turn fast, right columns slowly: "
      "each position gets a unique pattern, and a larger base C stretches the slow wavelengths.");
  FigureSpec left{&v.sinusoid, {"Encoding PE(t, j)", "position t", "dimension j", 0, 0}, &v.sinusoidBar, -1, 1, Colormap::Diverging, "value"};
  FigureSpec right{&v.sinusoidSimilarity, {"Similarity PE(t) . PE(t')", "position t", "position t'", 0, 0},
                   &v.similarityBar,      -v.sinSimilarityMax,
                   v.sinSimilarityMax,    Colormap::Diverging,
                   "dot product"};
  const FigureHover hover = drawFigurePair(ctx.renderer, left, right, ImGui::GetTextLineHeightWithSpacing() * 2);
  publishFigures(ctx, hover, "sinusoidal", v.sinusoid, 2);
  if (hover.figure == 0) {
    const int t = hover.row, j = hover.col, i = j / 2;
    const float omega = v.sinFrequencies[std::min<size_t>(i, v.sinFrequencies.size() - 1)];
    ImGui::BeginTooltip();
    ImGui::Text("position t = %d, dimension j = %d (%s of pair i = %d)", t, j, j % 2 == 0 ? "sin" : "cos", i);
    ImGui::Text("frequency C^(-2i/d) = %.4g rad per position, wavelength %.4g positions", omega, 2 * std::numbers::pi / omega);
    ImGui::Text("PE = %.4f", v.sinusoid.value(t, j));
    ImGui::EndTooltip();
  } else if (hover.figure == 1) {
    ImGui::BeginTooltip();
    ImGui::Text("PE(%d) . PE(%d) = %.4f", hover.row, hover.col, v.sinusoidSimilarity.value(hover.row, hover.col));
    ImGui::Text("offset t' - t = %d: every cell on this diagonal has the same value", hover.col - hover.row);
    ImGui::EndTooltip();
    drawOffsetDiagonal(hover, v.sinusoidSimilarity.rows());
  }
  ImGui::TextWrapped(
      "Each diagonal of the similarity matrix is constant: PE(t) . PE(t + k) = sum_i cos(k C^(-2i/d)) depends only on "
      "the offset k, so attention can find relative positions with one linear map.");
}

// ---- Learned ------------------------------------------------------------------------------

void drawLearnedTab(PanelContext& ctx, PositionalView& v) {
  const ModelConfig& c = ctx.session.config();
  const Weights& w = ctx.session.weights();
  if (!c.hasLearnedPositions() || !w.wpe) {
    ImGui::TextWrapped("This model has no learned position table: it uses %s.", positionSchemeName(c.position_encoding));
    ImGui::TextWrapped(
        "A GPT-2-style model learns an (n_positions x d_model) table by gradient descent and adds row t to the "
        "embedding of the token at position t. Load such a model (e.g. GPT-2) to see its table here.");
    return;
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  const int fewest = std::min(8, c.n_positions);
  ImGui::SliderInt("first positions shown", &v.learnedDraft, fewest, c.n_positions);
  if (ImGui::IsItemDeactivatedAfterEdit()) v.learnedPositions = std::clamp(v.learnedDraft, fewest, c.n_positions);  // on release: N^2 C
  ImGui::SameLine();
  ImGui::TextDisabled("(applied on release)");
  if (v.builtLearned != v.learnedPositions) {
    const int T = std::min(v.learnedPositions, c.n_positions), C = c.n_embd;
    const std::vector<float> table(w.wpe, w.wpe + static_cast<size_t>(T) * C);
    v.learnedMax = maxAbs(table);
    v.learned.setData(ctx.renderer, table.data(), T, C, -v.learnedMax, v.learnedMax, Colormap::Diverging);
    const auto similarity = rowSimilarity(table.data(), T, C);
    v.learnedSimilarityMax = maxAbs(similarity);
    v.learnedSimilarity.setData(ctx.renderer, similarity.data(), T, T, -v.learnedSimilarityMax, v.learnedSimilarityMax, Colormap::Diverging);
    v.builtLearned = v.learnedPositions;
  }
  ImGui::TextWrapped(
      "wpe: the model's (%d x %d) position table, first %d rows. Learned, not designed: a trained model shows smooth "
      "bands and a bright band along the diagonal of the similarity; random initial weights show noise.",
      c.n_positions, c.n_embd, v.learned.rows());
  FigureSpec left{
      &v.learned, {"Learned wpe(t, j)", "position t", "dimension j", 0, 0}, &v.learnedBar, -v.learnedMax, v.learnedMax, Colormap::Diverging,
      "weight"};
  FigureSpec right{&v.learnedSimilarity,
                   {"Similarity wpe(t) . wpe(t')", "position t", "position t'", 0, 0},
                   &v.learnedSimilarityBar,
                   -v.learnedSimilarityMax,
                   v.learnedSimilarityMax,
                   Colormap::Diverging,
                   "dot product"};
  const FigureHover hover = drawFigurePair(ctx.renderer, left, right, 0);
  publishFigures(ctx, hover, "learned", v.learned, 2);
  if (hover.figure == 0) {
    ImGui::SetTooltip("position t = %d, dimension j = %d\nwpe = %.4f", hover.row, hover.col, v.learned.value(hover.row, hover.col));
  } else if (hover.figure == 1) {
    ImGui::SetTooltip("wpe(%d) . wpe(%d) = %.4f\noffset t' - t = %d", hover.row, hover.col, v.learnedSimilarity.value(hover.row, hover.col),
                      hover.col - hover.row);
    drawOffsetDiagonal(hover, v.learnedSimilarity.rows());
  }
}

}  // namespace

void PositionalPanel::draw(PanelContext& ctx) {
  PositionalView& v = view_;
  const ModelConfig& c = ctx.session.config();
  if (!v.initialized) initializeKnobs(v, c);
  ImGui::TextWrapped("This model uses %s: %s. The other tabs show what the alternatives would do with this model's sizes.",
                     positionSchemeName(c.position_encoding), schemeDescription(c.position_encoding));
  if (!ImGui::BeginTabBar("encodings")) return;
  struct Tab {
    const char* label;
    PositionEncoding scheme;
    const char* region;  // the sub-tab's name (a lesson step's "tab")
  };
  const Tab tabs[] = {{"Sinusoidal", PositionEncoding::Sinusoidal, "positional_tab_sinusoidal"},
                      {"Learned table", PositionEncoding::Learned, "positional_tab_learned"},
                      {"RoPE", PositionEncoding::Rope, "positional_tab_rope"},
                      {"ALiBi", PositionEncoding::Alibi, "positional_tab_alibi"}};
  for (const Tab& tab : tabs) {
    const bool own = tab.scheme == c.position_encoding;
    const std::string label = std::string(tab.label) + (own ? " (this model)" : " (for comparison)") + "###" + tab.label;
    const ImGuiTabItemFlags flags =
        (own && v.selectModelTab && ctx.selectTab.empty() ? ImGuiTabItemFlags_SetSelected : 0) | subTabFlags(ctx, tab.region);
    const bool open = ImGui::BeginTabItem(label.c_str(), nullptr, flags);
    recordItem(ctx.shared, tab.region);
    if (!open) continue;
    switch (tab.scheme) {
      case PositionEncoding::Sinusoidal: drawSinusoidalTab(ctx, v); break;
      case PositionEncoding::Learned: drawLearnedTab(ctx, v); break;
      case PositionEncoding::Rope: drawRopeTab(ctx, v); break;
      case PositionEncoding::Alibi: drawAlibiTab(ctx, v); break;
      case PositionEncoding::None: break;
    }
    ImGui::EndTabItem();
  }
  v.selectModelTab = false;
  ImGui::EndTabBar();
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makePositionalPanel() { return std::make_unique<PositionalPanel>(); }

}  // namespace tscope::gui
