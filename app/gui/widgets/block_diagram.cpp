// The block diagram of a config, drawn with ImDrawList: the residual stream runs down the left,
// each sublayer branches off to the right and is added back at a (+). Pre-norm puts the norm on
// the branch (z = x + f(N(x))) and ends with a final norm; post-norm puts it on the stream after
// the add (z = N(x + f(x))). The whole diagram is laid out at one font size and shrunk to fit.
#include "app/gui/widgets/block_diagram.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

namespace tscope::gui {

namespace {

struct BoxText {
  std::string title, detail;  // detail may be empty (one-line box)
};

std::string normName(const ModelConfig& c) { return !c.hasNorm() ? "no norm" : c.norm == NormKind::RmsNorm ? "RMSNorm" : "LayerNorm"; }

// The layer's formula as configured: the norm's place, and whether the residual adds x back.
std::string layerFormula(const ModelConfig& c) {
  const std::string n = c.hasNorm() ? "N" : "";
  const std::string f = c.pre_norm ? "f(" + (n.empty() ? std::string("x") : n + "(x)") + ")" : "f(x)";
  const std::string sum = c.residual ? "x + " + f : f;
  const std::string z = c.pre_norm || n.empty() ? sum : n + "(" + sum + ")";
  return std::string(c.pre_norm ? " (pre-norm" : " (post-norm") + (c.residual ? "" : ", no residual") + ": z = " + z + ")";
}

BoxText attentionText(const ModelConfig& c) {
  const int kv = c.kvHeads();
  std::string title = kv == c.n_head ? "Multi-head attention" : kv == 1 ? "Multi-query attention" : "Grouped-query attention";
  std::string detail = std::to_string(c.n_head) + " heads";
  if (kv != c.n_head) detail += ", " + std::to_string(kv) + " kv";
  detail += ", D = " + std::to_string(c.headDim());
  if (c.attnDim() != c.n_embd) detail += " (H D = " + std::to_string(c.attnDim()) + ", not C)";
  detail += c.causal ? ", causal" : ", bidirectional";
  if (c.slidingWindow() > 0) detail += ", window " + std::to_string(c.slidingWindow());
  if (c.qk_norm) detail += ", q/k RMSNorm per head";
  if (c.position_encoding == PositionEncoding::Rope) detail += c.hasRopeScaling() ? ", RoPE (Llama 3 scaled) on q, k" : ", RoPE on q, k";
  if (c.position_encoding == PositionEncoding::Alibi) detail += ", ALiBi bias";
  return {title, detail};
}

std::string activationName(const ModelConfig& c) {
  switch (c.activation) {
    case Activation::GeluTanh: return "GELU (tanh)";
    case Activation::GeluErf: return "GELU (erf)";
    case Activation::Relu: return "ReLU";
    case Activation::SwiGlu: return "SwiGLU";
  }
  return "";
}

BoxText mlpText(const ModelConfig& c) {
  const std::string shape = std::to_string(c.n_embd) + " -> " + std::to_string(c.dFF()) + " -> " + std::to_string(c.n_embd);
  if (!c.isMoe()) return {"MLP (" + activationName(c) + ")", shape};
  std::string detail = "router + experts " + shape;
  if (c.moe_routing == MoeRoutingKind::ExpertChoice) detail += ", expert choice";
  if (!c.moe_normalize_top_k) detail += ", gates not renormalised";
  if (c.hasSharedExpert()) detail += " + sigmoid-gated shared expert (F " + std::to_string(c.moe_shared_expert_d_ff) + ")";
  return {"Mixture of " + std::to_string(c.n_experts) + " experts, top-" + std::to_string(c.moe_top_k), detail};
}

std::vector<BoxText> embeddingTexts(const ModelConfig& c) {
  std::vector<BoxText> texts = {{"Token embedding wte", std::to_string(c.vocab_size) + " x " + std::to_string(c.n_embd)}};
  if (c.isImage())  // a patch's pixels projected, [CLS] in front (docs/VISION.md)
    texts = {{"Patch embedding + [CLS]", std::to_string(c.patchDim()) + " pixels x " + std::to_string(c.n_embd)}};
  if (c.position_encoding == PositionEncoding::Learned)
    texts.push_back({"+ learned positions wpe", std::to_string(c.n_positions) + " x " + std::to_string(c.n_embd)});
  if (c.position_encoding == PositionEncoding::Sinusoidal) texts.push_back({"+ sinusoidal positions", "fixed, no parameters"});
  return texts;
}

std::string outputText(const ModelConfig& c) {
  return c.isImage() ? "softmax: class probabilities" : c.masked_lm ? "softmax: what fills each position" : "softmax: next-token probabilities";
}

BoxText unembeddingText(const ModelConfig& c) {
  const std::string shape = std::to_string(c.n_embd) + " x " + std::to_string(c.vocab_size);
  if (c.isImage()) return {"Classifier " + shape, "on [CLS]'s output, with a bias"};
  return {"Unembedding " + shape, c.tie_word_embeddings ? "tied: reuses wte (no new weights)" : "untied: its own lm_head"};
}

// Draws (or, with draw == nullptr, only measures) at font size `font`.
class Layout {
 public:
  Layout(ImDrawList* draw, float font) : draw_(draw), font_(font), pad_(font * 0.4f), gap_(font * 1.1f) {}

  float textWidth(const std::string& s) const { return ImGui::GetFont()->CalcTextSizeA(font_, FLT_MAX, 0.0f, s.c_str()).x; }
  float boxWidth(const BoxText& t) const { return std::max(textWidth(t.title), textWidth(t.detail)) + 2 * pad_; }
  float boxHeight(const BoxText& t) const { return (t.detail.empty() ? font_ : font_ * 2.1f) + 2 * pad_; }
  float gap() const { return gap_; }
  float font() const { return font_; }

  void box(ImVec2 min, float width, const BoxText& t, ImU32 fill) const {
    const ImVec2 max(min.x + width, min.y + boxHeight(t));
    draw_->AddRectFilled(min, max, fill, font_ * 0.3f);
    draw_->AddRect(min, max, ImGui::GetColorU32(ImGuiCol_Text, 0.6f), font_ * 0.3f);
    text(ImVec2(min.x + pad_, min.y + pad_), t.title, ImGui::GetColorU32(ImGuiCol_Text));
    if (!t.detail.empty()) text(ImVec2(min.x + pad_, min.y + pad_ + font_ * 1.1f), t.detail, ImGui::GetColorU32(ImGuiCol_TextDisabled));
  }
  void text(ImVec2 at, const std::string& s, ImU32 colour) const { draw_->AddText(ImGui::GetFont(), font_, at, colour, s.c_str()); }
  void arrow(ImVec2 from, ImVec2 to) const {
    drawArrow(draw_, from, to, ImGui::GetColorU32(ImGuiCol_Text), std::max(1.0f, font_ * 0.09f), font_ * 0.4f);
  }
  void line(ImVec2 from, ImVec2 to) const { draw_->AddLine(from, to, ImGui::GetColorU32(ImGuiCol_Text), std::max(1.0f, font_ * 0.09f)); }
  void plus(ImVec2 centre) const {
    const float r = plusRadius();
    const ImU32 colour = ImGui::GetColorU32(ImGuiCol_Text);
    draw_->AddCircleFilled(centre, r, ImGui::GetColorU32(ImGuiCol_WindowBg));
    draw_->AddCircle(centre, r, colour, 0, std::max(1.0f, font_ * 0.09f));
    line(ImVec2(centre.x - r * 0.6f, centre.y), ImVec2(centre.x + r * 0.6f, centre.y));
    line(ImVec2(centre.x, centre.y - r * 0.6f), ImVec2(centre.x, centre.y + r * 0.6f));
  }
  float plusRadius() const { return font_ * 0.5f; }

 private:
  ImDrawList* draw_;
  float font_, pad_, gap_;
};

struct Widths {
  float stream, branchStart, row, total;
};

Widths measure(const Layout& layout, const ModelConfig& c) {
  const BoxText norm{normName(c), ""};
  float stream = std::max({layout.boxWidth(unembeddingText(c)), layout.boxWidth({outputText(c), ""}), layout.boxWidth({"final " + normName(c), ""})});
  const auto embeddings = embeddingTexts(c);
  stream = std::max(stream, layout.boxWidth(embeddings[0]));
  const float positions = embeddings.size() > 1 ? layout.boxWidth(embeddings[1]) : 0.0f;
  // Sublayer boxes start right of the stream (post-norm: right of the norm box on the stream).
  const float branchStart = (c.pre_norm ? 0.0f : layout.boxWidth(norm) * 0.5f) + layout.gap() * 1.5f;
  const float sublayer = std::max(layout.boxWidth(attentionText(c)), layout.boxWidth(mlpText(c)));
  const float row = (c.pre_norm ? layout.boxWidth(norm) + layout.gap() : 0.0f) + sublayer;
  const float right = std::max(stream * 0.5f + layout.gap() + positions, branchStart + row);
  return {stream, branchStart, row, layout.gap() * 0.5f + stream * 0.5f + right + layout.gap() * 0.5f};
}

}  // namespace

void drawArrow(ImDrawList* draw, ImVec2 from, ImVec2 to, ImU32 colour, float thickness, float head) {
  draw->AddLine(from, to, colour, thickness);
  ImVec2 d(to.x - from.x, to.y - from.y);
  const float length = std::max(1e-3f, std::sqrt(d.x * d.x + d.y * d.y));
  d = ImVec2(d.x / length, d.y / length);
  const ImVec2 n(-d.y, d.x);
  draw->AddTriangleFilled(to, ImVec2(to.x - d.x * head + n.x * head * 0.5f, to.y - d.y * head + n.y * head * 0.5f),
                          ImVec2(to.x - d.x * head - n.x * head * 0.5f, to.y - d.y * head - n.y * head * 0.5f), colour);
}

void drawBlockDiagram(const ModelConfig& c, float width) {
  float font = ImGui::GetFontSize();
  const float natural = measure(Layout(nullptr, font), c).total;
  if (natural > width) font = std::max(font * 0.55f, font * width / natural);
  const Layout layout(ImGui::GetWindowDrawList(), font);
  const Widths w = measure(layout, c);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float xs = origin.x + layout.gap() * 0.5f + w.stream * 0.5f;  // the residual stream
  const float gap = layout.gap();
  const ImU32 textColour = ImGui::GetColorU32(ImGuiCol_Text);
  float y = origin.y;
  auto streamBox = [&](const BoxText& t, ImU32 fill, float from) {
    const float boxW = std::max(layout.boxWidth(t), w.stream * (t.detail.empty() ? 0.6f : 1.0f));
    layout.arrow(ImVec2(xs, from), ImVec2(xs, y));
    layout.box(ImVec2(xs - boxW * 0.5f, y), boxW, t, fill);
    y += layout.boxHeight(t);
    return y;
  };

  // Tokens in, embeddings, positions added.
  const std::string tokens = c.isImage() ? "image: [CLS] + " + std::to_string(c.numPatches()) + " patches (T)" : "token ids (T)";
  layout.text(ImVec2(xs - layout.textWidth(tokens) * 0.5f, y), tokens, textColour);
  y += font * 1.2f;
  const auto embeddings = embeddingTexts(c);
  float last = y;
  y += gap * 0.6f;
  streamBox(embeddings[0], kEmbeddingFill, last);
  last = y;
  if (embeddings.size() > 1) {
    const float boxTop = y - layout.boxHeight(embeddings[0]);
    const float px = xs + w.stream * 0.5f + gap;
    layout.box(ImVec2(px, boxTop), layout.boxWidth(embeddings[1]), embeddings[1], kEmbeddingFill);
    const float plusY = y + gap * 0.8f;
    const float midX = px + layout.boxWidth(embeddings[1]) * 0.5f;
    layout.line(ImVec2(midX, boxTop + layout.boxHeight(embeddings[1])), ImVec2(midX, plusY));
    layout.arrow(ImVec2(midX, plusY), ImVec2(xs + layout.plusRadius(), plusY));
    layout.arrow(ImVec2(xs, last), ImVec2(xs, plusY - layout.plusRadius()));
    layout.plus(ImVec2(xs, plusY));
    last = y = plusY + layout.plusRadius();
  }

  // The repeated block.
  const float frameTop = y + gap * 0.6f;
  y = frameTop + font * 2.2f;  // room for the "x L layers" label
  const BoxText norm{normName(c), ""};
  const BoxText sublayers[2] = {attentionText(c), mlpText(c)};
  const ImU32 fills[2] = {kAttentionFill, c.isMoe() ? kMoeFill : kMlpFill};
  for (int s = 0; s < 2; ++s) {
    const float rowHeight = layout.boxHeight(sublayers[s]);
    const float centreY = y + rowHeight * 0.5f;
    float x = xs + w.branchStart;
    layout.line(ImVec2(xs, last), ImVec2(xs, centreY));  // the stream continues down
    layout.line(ImVec2(xs, centreY), ImVec2(x - (c.pre_norm ? gap * 0.1f : 0), centreY));
    if (c.pre_norm) {
      layout.box(ImVec2(x, centreY - layout.boxHeight(norm) * 0.5f), layout.boxWidth(norm), norm, kNormFill);
      x += layout.boxWidth(norm);
      layout.arrow(ImVec2(x, centreY), ImVec2(x + gap, centreY));
      x += gap;
    } else {
      layout.arrow(ImVec2(xs, centreY), ImVec2(x, centreY));
    }
    const float boxW = w.row - (c.pre_norm ? layout.boxWidth(norm) + gap : 0.0f);
    layout.box(ImVec2(x, y), boxW, sublayers[s], fills[s]);
    const float addY = y + rowHeight + gap * 0.7f;
    layout.line(ImVec2(x + boxW * 0.5f, y + rowHeight), ImVec2(x + boxW * 0.5f, addY));
    if (c.residual) {
      layout.arrow(ImVec2(x + boxW * 0.5f, addY), ImVec2(xs + layout.plusRadius(), addY));
      layout.arrow(ImVec2(xs, centreY), ImVec2(xs, addY - layout.plusRadius()));
      layout.plus(ImVec2(xs, addY));
    } else {  // no residual: the sublayer's output replaces the stream
      layout.arrow(ImVec2(x + boxW * 0.5f, addY), ImVec2(xs, addY));
    }
    last = y = addY + layout.plusRadius();
    if (!c.pre_norm && c.hasNorm()) {  // post-norm: z = N(x + f(x)), the norm sits on the stream
      y += gap * 0.6f;
      last = streamBox(norm, kNormFill, last);
    }
    y += gap * 0.9f;
  }
  const float frameBottom = y - gap * 0.3f;
  const ImVec2 frameMin(origin.x + gap * 0.2f, frameTop), frameMax(origin.x + w.total - gap * 0.2f, frameBottom);
  ImGui::GetWindowDrawList()->AddRect(frameMin, frameMax, ImGui::GetColorU32(ImGuiCol_Text, 0.5f), font * 0.4f, 0, std::max(1.0f, font * 0.08f));
  const std::string repeat = "x " + std::to_string(c.n_layer) + (c.n_layer == 1 ? " layer" : " layers") + layerFormula(c);
  layout.text(ImVec2(frameMax.x - layout.textWidth(repeat) - gap * 0.4f, frameTop + font * 0.4f), repeat, textColour);

  // Final norm (pre-norm only), unembedding, softmax.
  y = frameBottom + gap * 0.8f;
  layout.line(ImVec2(xs, last), ImVec2(xs, frameBottom));
  last = frameBottom;
  if (c.hasFinalNorm()) {
    last = streamBox({"final " + normName(c), ""}, kNormFill, last);
    y += gap * 0.8f;
  }
  last = streamBox(unembeddingText(c), kOutputFill, last);
  y += gap * 0.8f;
  streamBox({outputText(c), ""}, kOutputFill, last);
  ImGui::Dummy(ImVec2(w.total, y - origin.y + font * 0.5f));
}

}  // namespace tscope::gui
