// The encoder-decoder diagram (encoder_decoder_diagram.h). Each stack is a column of items (a
// heading, the embedding, one frame per layer holding its sublayers, the boxes after the layers),
// measured and drawn by the same code at one font size; the whole figure is measured at the UI
// font, then drawn at the size that fits. Residual adds and norms inside a layer are left to the
// Architecture panel's block diagram: this one shows what talks to what.
#include "app/gui/widgets/encoder_decoder_diagram.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "app/gui/widgets/block_diagram.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kHighlight = IM_COL32(235, 80, 50, 255);

struct Box {
  std::string text;
  ImU32 fill;
  std::string detail{};  // a second, smaller line ("" none)
};

struct StackSpec {
  std::string heading, subheading;
  Box input;  // the embedding
  int layers = 0;
  std::vector<Box> sublayers;  // of every layer, in order
  std::vector<Box> tail;       // after the layers
  std::string footer;          // a line under the last box
};

// Sizes at font size f.
struct Geometry {
  explicit Geometry(float font) : f(font), pad(font * 0.35f), gap(font * 0.6f), frameTitle(font * 1.15f), inset(font * 0.4f) {}
  float f, pad, gap, frameTitle, inset;
  static constexpr float kDetail = 0.8f;  // the detail line's text size
  float textWidth(const std::string& s, float scale = 1.0f) const { return ImGui::GetFont()->CalcTextSizeA(f * scale, FLT_MAX, 0.0f, s.c_str()).x; }
  float boxWidth(const Box& b) const { return std::max(textWidth(b.text), textWidth(b.detail, kDetail)) + 2 * pad; }
  float boxHeight(const Box& b) const { return f * (b.detail.empty() ? 1.0f : 1.05f + kDetail) + 2 * pad; }
  float frameHeight(const StackSpec& s) const {
    float height = frameTitle + inset + (s.sublayers.size() - 1) * gap * 0.7f;
    for (const Box& b : s.sublayers) height += boxHeight(b);
    return height;
  }
};

Box feedForwardBox(const ModelConfig& c) {
  const std::string shape = std::to_string(c.n_embd) + " \u2192 " + std::to_string(c.dFF()) + " \u2192 " + std::to_string(c.n_embd);
  if (c.isMoe()) return {"Mixture of experts", kMoeFill, std::to_string(c.n_experts) + " experts, top-" + std::to_string(c.moe_top_k)};
  return {"Feed-forward", kMlpFill, shape};
}

StackSpec encoderSpec(const ModelConfig& c) {
  StackSpec s;
  s.heading = "Encoder: " + std::to_string(c.n_encoder_layer) + (c.n_encoder_layer == 1 ? " layer" : " layers");
  s.subheading = "the source: S tokens";
  s.input = {"Embedding + positions", kEmbeddingFill};
  s.layers = c.n_encoder_layer;
  s.sublayers = {{"Self-attention", kAttentionFill, "bidirectional"}};
  if (c.hasFeedForward()) s.sublayers.push_back(feedForwardBox(c));
  if (c.hasFinalNorm()) s.tail.push_back({"Final norm", kNormFill});
  s.tail.push_back({"Encoder output", kCrossAttentionFill, "S x " + std::to_string(c.n_embd)});
  s.footer = "read by every cross-attention";
  return s;
}

StackSpec decoderSpec(const ModelConfig& c) {
  StackSpec s;
  s.heading = "Decoder: " + std::to_string(c.n_layer) + (c.n_layer == 1 ? " layer" : " layers");
  s.subheading = "the target so far: ^ + T";
  s.input = {"Embedding + positions", kEmbeddingFill};
  s.layers = c.n_layer;
  s.sublayers = {{"Self-attention", kAttentionFill, "masked (causal)"}, {"Cross-attention", kCrossAttentionFill, "k, v: encoder output"}};
  if (c.hasFeedForward()) s.sublayers.push_back(feedForwardBox(c));
  if (c.hasFinalNorm()) s.tail.push_back({"Final norm", kNormFill});
  s.tail.push_back({"Unembedding + softmax", kOutputFill});
  s.footer = "the next target token";
  return s;
}

float columnWidth(const Geometry& g, const StackSpec& s) {
  float widest = std::max(g.boxWidth(s.input), g.textWidth("layer 00"));
  for (const Box& b : s.sublayers) widest = std::max(widest, g.boxWidth(b));
  for (const Box& b : s.tail) widest = std::max(widest, g.boxWidth(b));
  const float boxes = widest + 2 * g.inset;
  return std::max({boxes, g.textWidth(s.heading), g.textWidth(s.subheading, 0.85f), g.textWidth(s.footer, 0.85f)});
}

float columnHeight(const Geometry& g, const StackSpec& s) {
  float y = g.f * 2.2f + g.gap + g.boxHeight(s.input);
  y += s.layers * (g.gap + g.frameHeight(s));
  for (const Box& b : s.tail) y += g.gap + g.boxHeight(b);
  return y + g.gap * 0.4f + g.f;
}

// Where a drawn column put the things the bus and the clicks need.
struct ColumnPlaces {
  std::vector<ImVec4> frames;          // (layers) x0, y0, x1, y1
  std::vector<float> secondSublayerY;  // (layers) centre of each layer's second sublayer (the decoder's cross-attention)
  float boxLeft = 0, boxRight = 0;     // the boxes' horizontal extent
  float lastBoxY = 0;                  // centre of the last box (the encoder's output)
};

class Painter {
 public:
  Painter(ImDrawList* draw, const Geometry& g) : draw_(draw), g_(g) {}

  void text(ImVec2 at, const std::string& s, ImU32 colour, float scale = 1.0f) const {
    draw_->AddText(ImGui::GetFont(), g_.f * scale, at, colour, s.c_str());
  }
  void box(ImVec2 min, float width, const Box& b) const {
    const ImVec2 max(min.x + width, min.y + g_.boxHeight(b));
    draw_->AddRectFilled(min, max, b.fill, g_.f * 0.3f);
    draw_->AddRect(min, max, ImGui::GetColorU32(ImGuiCol_Text, 0.55f), g_.f * 0.3f);
    text(ImVec2(min.x + (width - g_.textWidth(b.text)) * 0.5f, min.y + g_.pad), b.text, ImGui::GetColorU32(ImGuiCol_Text));
    if (!b.detail.empty())
      text(ImVec2(min.x + (width - g_.textWidth(b.detail, Geometry::kDetail)) * 0.5f, min.y + g_.pad + g_.f * 1.05f), b.detail,
           ImGui::GetColorU32(ImGuiCol_TextDisabled), Geometry::kDetail);
  }
  void arrow(ImVec2 from, ImVec2 to) const {
    drawArrow(draw_, from, to, ImGui::GetColorU32(ImGuiCol_Text, 0.85f), std::max(1.0f, g_.f * 0.08f), g_.f * 0.38f);
  }
  void line(ImVec2 from, ImVec2 to) const { draw_->AddLine(from, to, ImGui::GetColorU32(ImGuiCol_Text, 0.85f), std::max(1.0f, g_.f * 0.08f)); }

  ColumnPlaces column(const StackSpec& s, ImVec2 origin, float width, int highlighted) const {
    ColumnPlaces places;
    const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const float centre = origin.x + width * 0.5f;
    const float boxX = origin.x + g_.inset, boxW = width - 2 * g_.inset;
    places.boxLeft = boxX;
    places.boxRight = boxX + boxW;
    text(ImVec2(centre - g_.textWidth(s.heading) * 0.5f, origin.y), s.heading, ink);
    text(ImVec2(centre - g_.textWidth(s.subheading, 0.85f) * 0.5f, origin.y + g_.f * 1.15f), s.subheading, dim, 0.85f);
    float y = origin.y + g_.f * 2.2f;
    float last = y;  // bottom of the item above (the arrow's start)
    auto boxAt = [&](const Box& b) {
      arrow(ImVec2(centre, last), ImVec2(centre, y));
      box(ImVec2(boxX, y), boxW, b);
      places.lastBoxY = y + g_.boxHeight(b) * 0.5f;
      y += g_.boxHeight(b);
      last = y;
    };
    y += g_.gap;
    boxAt(s.input);
    for (int l = 0; l < s.layers; ++l) {
      y += g_.gap;
      const ImVec2 frameMin(origin.x, y), frameMax(origin.x + width, y + g_.frameHeight(s));
      const bool selected = l == highlighted;
      if (selected) draw_->AddRectFilled(frameMin, frameMax, IM_COL32(235, 80, 50, 28), g_.f * 0.4f);
      const ImU32 frameColour = selected ? kHighlight : ImGui::GetColorU32(ImGuiCol_Text, 0.35f);
      draw_->AddRect(frameMin, frameMax, frameColour, g_.f * 0.4f, 0, selected ? std::max(2.0f, g_.f * 0.16f) : std::max(1.0f, g_.f * 0.07f));
      text(ImVec2(frameMin.x + g_.inset, y + g_.f * 0.1f), "layer " + std::to_string(l), selected ? kHighlight : dim, 0.85f);
      places.frames.push_back(ImVec4(frameMin.x, frameMin.y, frameMax.x, frameMax.y));
      y += g_.frameTitle;
      for (size_t i = 0; i < s.sublayers.size(); ++i) {
        if (i > 0) y += g_.gap * 0.7f;
        if (i == 1) places.secondSublayerY.push_back(y + g_.boxHeight(s.sublayers[i]) * 0.5f);
        boxAt(s.sublayers[i]);
      }
      y = frameMax.y;
    }
    for (const Box& b : s.tail) {
      y += g_.gap;
      boxAt(b);
    }
    text(ImVec2(centre - g_.textWidth(s.footer, 0.85f) * 0.5f, y + g_.gap * 0.4f), s.footer, dim, 0.85f);
    return places;
  }

 private:
  ImDrawList* draw_;
  const Geometry& g_;
};

// Which frame of `frames` the mouse is over (-1: none).
int hoveredFrame(const std::vector<ImVec4>& frames) {
  if (!ImGui::IsWindowHovered()) return -1;
  const ImVec2 mouse = ImGui::GetMousePos();
  for (size_t i = 0; i < frames.size(); ++i)
    if (mouse.x >= frames[i].x && mouse.x < frames[i].z && mouse.y >= frames[i].y && mouse.y < frames[i].w) return static_cast<int>(i);
  return -1;
}

}  // namespace

EncoderDecoderDiagram drawEncoderDecoderDiagram(const ModelConfig& c, ImVec2 size, StackLayers highlighted, bool pickable) {
  const StackSpec encoder = encoderSpec(c), decoder = decoderSpec(c);
  auto measure = [&](float font) {
    const Geometry g(font);
    const float width = columnWidth(g, encoder) + columnWidth(g, decoder) + g.f * 2.4f;
    const float height = std::max(columnHeight(g, encoder), columnHeight(g, decoder));
    return ImVec2(width, height);
  };
  float font = ImGui::GetFontSize();
  const ImVec2 natural = measure(font);
  float scale = std::min(1.0f, size.x / natural.x);
  if (size.y > 0) scale = std::min(scale, size.y / natural.y);
  font *= std::max(0.5f, scale);
  const Geometry g(font);
  const Painter paint(ImGui::GetWindowDrawList(), g);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float encoderWidth = columnWidth(g, encoder), decoderWidth = columnWidth(g, decoder), busGap = g.f * 2.4f;
  EncoderDecoderDiagram result;
  const ColumnPlaces left = paint.column(encoder, origin, encoderWidth, highlighted.encoder);
  const ColumnPlaces right = paint.column(decoder, ImVec2(origin.x + encoderWidth + busGap, origin.y), decoderWidth, highlighted.decoder);
  // The bus: from the encoder's output box, right to the gap, along it, and into every cross-attention.
  const float busX = left.boxRight + g.inset + busGap * 0.5f;
  float top = left.lastBoxY, bottom = left.lastBoxY;
  for (float y : right.secondSublayerY) top = std::min(top, y), bottom = std::max(bottom, y);
  paint.line(ImVec2(left.boxRight, left.lastBoxY), ImVec2(busX, left.lastBoxY));
  paint.line(ImVec2(busX, top), ImVec2(busX, bottom));
  for (float y : right.secondSublayerY) paint.arrow(ImVec2(busX, y), ImVec2(right.boxLeft, y));
  result.encoderFrames = left.frames;
  result.decoderFrames = right.frames;
  const ImVec2 claimed = measure(font);
  ImGui::Dummy(claimed);
  if (!pickable) return result;
  const int encoderHovered = hoveredFrame(left.frames), decoderHovered = hoveredFrame(right.frames);
  auto outline = [&](const ImVec4& r) {
    ImGui::GetWindowDrawList()->AddRect(ImVec2(r.x, r.y), ImVec2(r.z, r.w), ImGui::GetColorU32(ImGuiCol_Text, 0.9f), g.f * 0.4f);
  };
  if (encoderHovered >= 0) {
    outline(left.frames[encoderHovered]);
    ImGui::SetTooltip("encoder layer %d: click to show its self-attention", encoderHovered);
    if (ImGui::IsMouseClicked(0)) result.clicked.encoder = encoderHovered;
  }
  if (decoderHovered >= 0) {
    outline(right.frames[decoderHovered]);
    ImGui::SetTooltip("decoder layer %d: click to show its cross- and self-attention", decoderHovered);
    if (ImGui::IsMouseClicked(0)) result.clicked.decoder = decoderHovered;
  }
  return result;
}

}  // namespace tscope::gui
