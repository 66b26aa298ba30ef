// The Vision panel's layout and its figures beside the image (see panel_vision.h): the classes
// before and after, the chosen patch's pixels and embedding, the position similarity grid and the
// patch-embedding filters.
#include <algorithm>
#include <cmath>

#include "app/gui/panels/vision/panel_vision.h"
#include "app/gui/widgets/layer_head_picker.h"
#include "model/nn/vision_views.h"

namespace tscope::gui {

namespace {

// Blue for negative, white for 0, red for positive: v in [-1, 1].
ImU32 diverging(float v) {
  v = std::clamp(v, -1.0f, 1.0f);
  const int fade = static_cast<int>(255 * (1 - std::fabs(v)));
  return v >= 0 ? IM_COL32(255, fade, fade, 255) : IM_COL32(fade, fade, 255, 255);
}

std::vector<std::string> labelsOf(const Session& session) {
  std::vector<std::string> labels;
  if (const Tokenizer* t = session.tokenizer())
    for (int id = 0; id < t->vocabSize(); ++id) labels.push_back(t->tokenBytes(id));
  return labels;
}

// One column of the top classes, `width` pixels wide; their JSON.
nlohmann::json classColumn(const char* title, const std::vector<ClassScore>& top, float width) {
  nlohmann::json out = nlohmann::json::array();
  ImGui::BeginGroup();
  ImGui::TextUnformatted(title);
  for (const ClassScore& c : top) {
    char label[96];
    std::snprintf(label, sizeof label, "%s  %.1f%%", tokenLabel(c.label, 20).c_str(), 100 * c.p);
    drawBar(static_cast<float>(c.p), 1.0f, width, BarStyle::Normal, label);
    out.push_back({{"label", c.label}, {"id", c.id}, {"p", c.p}});
  }
  ImGui::EndGroup();
  return out;
}

}  // namespace

void VisionPanel::draw(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  if (!c.isImage()) return drawNotAnImageModel(ctx);
  const Snapshot* s = ctx.snapshot;
  drawInputControls(ctx);
  ImGui::TextUnformatted("A click on the image:");
  const bool digits = c.image_size == session::DigitCanvas::kSide && c.num_channels == 1;
  if (!digits && click_ == ClickMode::Draw) click_ = ClickMode::Look;
  if (digits) {
    ImGui::SameLine();
    if (ImGui::RadioButton("draws", click_ == ClickMode::Draw)) click_ = ClickMode::Draw;
    recordItem(ctx.shared, "vision_click_draw");
  }
  ImGui::SameLine();
  if (ImGui::RadioButton("masks a patch", click_ == ClickMode::Mask)) click_ = ClickMode::Mask;
  recordItem(ctx.shared, "vision_click_mask");
  ImGui::SameLine();
  if (ImGui::RadioButton("shows a patch's attention", click_ == ClickMode::Look)) click_ = ClickMode::Look;
  recordItem(ctx.shared, "vision_click_look");
  if (!ctx.state.maskedPatches.empty()) {
    ImGui::SameLine();
    if (ImGui::SmallButton("unmask all")) {
      ctx.state.maskedPatches.clear();
      ctx.repost = true;
    }
    recordItem(ctx.shared, "vision_unmask");
  }
  layerHeadSliders(&ctx.shared, {.region = "vision", .headDisabled = averageHeads_ || rollout_}, ctx.state.layer, c.n_layer, ctx.state.head,
                   c.n_head);
  ImGui::SameLine();
  ImGui::Checkbox("mean of heads", &averageHeads_);
  recordItem(ctx.shared, "vision_mean_heads");
  ImGui::SameLine();
  ImGui::Checkbox("rollout (every layer)", &rollout_);
  recordItem(ctx.shared, "vision_rollout");
  ImGui::TextDisabled("Attention from %s%s", query_ == 0 ? "[CLS], whose output is classified" : imageTokenLabels(c)[query_].c_str(),
                      query_ == 0 ? "" : " (click it again for [CLS])");
  if (s && !s->error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", s->error.c_str());
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float side = std::max(ImGui::GetFontSize() * 8, std::min(avail.x * 0.42f, avail.y - ImGui::GetFontSize() * 2));
  ImGui::BeginGroup();
  drawImage(ctx, s && s->error.empty() ? s : nullptr, side);
  ImGui::EndGroup();
  ImGui::SameLine();
  ImGui::BeginChild("##vision_side", ImVec2(0, side + ImGui::GetFontSize() * 2));
  if (s && s->error.empty()) {
    drawPredictions(ctx, *s);
    drawPatchDetail(ctx);
  }
  drawPositions(ctx);
  drawFilters(ctx);
  ImGui::EndChild();
}

void VisionPanel::drawPredictions(PanelContext& ctx, const Snapshot& s) {
  const int V = ctx.session.config().vocab_size;
  if (s.trace.logits.size() < (size_t)V) return;
  const std::vector<std::string> labels = labelsOf(ctx.session);
  const std::vector<float> logits(s.trace.logits.begin(), s.trace.logits.begin() + V);  // [CLS]'s row
  const float width = ImGui::GetFontSize() * 14;
  const bool before = !s.cleanLogits.empty();
  nlohmann::json& facts = ctx.shared.facts["vision"];
  facts["top"] = classColumn(before ? "After (masked / ablated)" : "What the model sees", topClasses(logits, labels, 5), width);
  recordItem(ctx.shared, "vision_classes");
  if (before) {
    ImGui::SameLine();
    facts["before_top"] = classColumn("Before (whole image)", topClasses(s.cleanLogits, labels, 5), width);
  }
}

void VisionPanel::drawPatchDetail(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  const int patch = hovered_ >= 0 ? hovered_ : query_ > 0 ? query_ - 1 : 0, K = c.patchDim(), C = c.n_embd, p = c.patch_size;
  if (ctx.state.image.size() != (size_t)c.imageFloats()) return;
  const std::vector<float> image = maskImagePatches(c, ctx.state.image, ctx.state.maskedPatches);
  const std::vector<float> rows = imagePatchRows(c, image.data(), image.size());
  const float* pixels = rows.data() + (size_t)(1 + patch) * K;
  // Its embedding: the pixels times patch.weight, plus the projection's bias and the position's row.
  const Weights& w = ctx.session.weights();
  std::vector<float> embedding(C, 0.0f);
  for (int j = 0; j < C; ++j) {
    double e = w.wte[C + j] + (w.wpe ? w.wpe[(size_t)(1 + patch) * C + j] : 0.0f);
    for (int k = 0; k < K; ++k) e += pixels[k] * w.patchWeight[(size_t)k * C + j];
    embedding[j] = static_cast<float>(e);
  }
  ImGui::Spacing();
  ImGui::Text("Patch %s: %d x %d pixels%s, flattened to %d numbers, projected to %d", imageTokenLabels(c)[1 + patch].c_str(), p, p,
              c.num_channels > 1 ? " x 3 colours" : "", K, C);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize(), strip = std::min(ImGui::GetContentRegionAvail().x, font * 30);
  const float cell = std::min(font, strip / K);
  ImVec2 at = ImGui::GetCursorScreenPos();
  const float lo = *std::min_element(pixels, pixels + K), hi = *std::max_element(pixels, pixels + K);
  for (int k = 0; k < K; ++k) {
    const float t = hi > lo ? (pixels[k] - lo) / (hi - lo) : 0.5f;
    const int g = static_cast<int>(255 * t);
    draw->AddRectFilled(ImVec2(at.x + k * cell, at.y), ImVec2(at.x + (k + 1) * cell, at.y + font), IM_COL32(g, g, g, 255));
  }
  ImGui::Dummy(ImVec2(K * cell, font));
  at = ImGui::GetCursorScreenPos();
  float largest = 0;
  for (float e : embedding) largest = std::max(largest, std::fabs(e));
  const float width = strip / C;
  for (int j = 0; j < C; ++j)
    draw->AddRectFilled(ImVec2(at.x + j * width, at.y), ImVec2(at.x + (j + 1) * width, at.y + font),
                        diverging(largest > 0 ? embedding[j] / largest : 0.0f));
  ImGui::Dummy(ImVec2(strip, font));
  recordItem(ctx.shared, "vision_embedding");
  ImGui::TextDisabled("its embedding (blue negative, red positive): the token the blocks read");
  ctx.shared.facts["vision"]["detail_patch"] = patch;
}

void VisionPanel::drawPositions(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  const Weights& w = ctx.session.weights();
  if (viewsFor_ != ctx.session.serial()) {
    viewsFor_ = ctx.session.serial();
    viewsNote_.clear();
    similarity_.clear();
    try {
      if (hasPositionTable(c)) similarity_ = positionSimilarity(c, w.wpe, (size_t)c.n_positions * c.n_embd);
      else viewsNote_ = std::string("this model adds no position embeddings (position_encoding ") + toString(c.position_encoding) + ")";
      filters_ = patchFilters(c, w.patchWeight, (size_t)c.patchDim() * c.n_embd);
    } catch (const std::exception& e) {
      viewsNote_ = e.what();
    }
  }
  ImGui::Spacing();
  ImGui::TextUnformatted("Position embeddings: each patch's similarity (cosine) to every other");
  if (similarity_.empty()) {
    ImGui::TextDisabled("%s", viewsNote_.c_str());
    return;
  }
  const int G = c.patchGrid(), P = G * G;
  const float font = ImGui::GetFontSize(), total = std::min(ImGui::GetContentRegionAvail().x, font * 16);
  const float tile = total / G, cell = (tile - 2) / G;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 at = ImGui::GetCursorScreenPos();
  for (int i = 0; i < P && G <= 16; ++i)
    for (int j = 0; j < P; ++j) {
      const int tileRow = i / G, tileColumn = i % G, cellRow = j / G, cellColumn = j % G;  // places on the grid
      const float x = at.x + tileColumn * tile + cellColumn * cell, y = at.y + tileRow * tile + cellRow * cell;
      draw->AddRectFilled(ImVec2(x, y), ImVec2(x + cell, y + cell), diverging(similarity_[(size_t)i * P + j]));
    }
  ImGui::Dummy(ImVec2(total, total));
  recordItem(ctx.shared, "vision_positions");
  ImGui::TextDisabled("tile (row, column) is that patch's row of the grid (ViT paper, Figure 7)");
  if (G > 16) ImGui::TextDisabled("(%d x %d patches: too many tiles to draw)", G, G);
  ctx.shared.facts["vision"]["position_similarity_diagonal"] = similarity_[0];
}

void VisionPanel::drawFilters(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  if (filters_.empty()) return;
  const int K = c.patchDim(), p = c.patch_size, shown = std::min(c.n_embd, 32);
  ImGui::Spacing();
  ImGui::Text("Patch embedding filters (the first %d of %d): what each embedding number looks for", shown, c.n_embd);
  const float font = ImGui::GetFontSize(), tile = font * 1.6f, cell = tile / p;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const int perRow = std::max(1, static_cast<int>(ImGui::GetContentRegionAvail().x / (tile + 4)));
  for (int f = 0; f < shown; ++f) {
    const int row = f / perRow, column = f % perRow;
    const float x0 = at.x + column * (tile + 4), y0 = at.y + row * (tile + 4);
    for (int y = 0; y < p; ++y)
      for (int x = 0; x < p; ++x) {
        ImU32 color;
        if (c.num_channels == 3) {
          int rgb[3];
          for (int ch = 0; ch < 3; ++ch) rgb[ch] = static_cast<int>(127.5f * (1 + filters_[(size_t)f * K + (ch * p + y) * p + x]));
          color = IM_COL32(rgb[0], rgb[1], rgb[2], 255);
        } else {
          color = diverging(filters_[(size_t)f * K + y * p + x]);
        }
        draw->AddRectFilled(ImVec2(x0 + x * cell, y0 + y * cell), ImVec2(x0 + (x + 1) * cell, y0 + (y + 1) * cell), color);
      }
  }
  const int rows = (shown + perRow - 1) / perRow;
  ImGui::Dummy(ImVec2(perRow * (tile + 4), rows * (tile + 4)));
  recordItem(ctx.shared, "vision_filters");
}

void VisionPanel::describe(PanelContext& ctx, const Snapshot* s, const std::vector<float>& shown) {
  nlohmann::json& facts = ctx.shared.facts["vision"];
  facts["image_model"] = true;
  facts["query"] = query_;
  facts["rollout"] = rollout_;
  facts["mean_heads"] = averageHeads_;
  facts["click"] = click_ == ClickMode::Draw ? "draw" : click_ == ClickMode::Mask ? "mask" : "look";
  facts["masked"] = ctx.state.maskedPatches;
  facts["hovered"] = hovered_;
  facts["test_index"] = testIndex_;
  facts["test_label"] = testLabel_;
  double ink = 0;
  for (float v : ctx.state.image) ink += v;
  facts["ink"] = ink;
  facts["overlay"] = shown;
  facts["snapshot"] = s ? s->id : 0;
  facts["picture"] = picturePath_;
  facts["picture_error"] = pictureError_;
  const int G = ctx.session.config().patchGrid();
  if (shown.size() == (size_t)G * G) {
    ctx.shared.exportable.name = rollout_ ? "vision_rollout_q" + std::to_string(query_)
                                          : "vision_attention_l" + std::to_string(ctx.state.layer) +
                                                (averageHeads_ ? "_mean" : "_h" + std::to_string(ctx.state.head)) + "_q" + std::to_string(query_);
    ctx.shared.exportable.values = shown;
    ctx.shared.exportable.rows = G;
    ctx.shared.exportable.cols = G;
  } else {
    ctx.shared.exportNote = "no attention map yet";
  }
}

}  // namespace tscope::gui
