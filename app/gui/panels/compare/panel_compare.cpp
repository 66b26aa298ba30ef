// The Compare panel (panel_compare.h): the setup row (the three common cases, the right side's
// model, prompt and what-ifs), then the maps and the numbers of both sides.
#include "app/gui/panels/compare/panel_compare.h"

#include <imgui.h>

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "app/gui/widgets/layer_head_picker.h"
#include "app/gui/widgets/layout.h"
#include "app/session/file_kinds.h"
#include "model/core/units.h"
#include "model/io/hf_checkpoint.h"
#include "model/nn/inside_views.h"
#include "model/nn/trace_views.h"
#include "model/theory/architecture_rows.h"

namespace tscope::gui {

namespace {

// The byte spans of a snapshot's tokens (for the alignment of two tokenizations of one text).
std::vector<TokenSpan> spans(Session& session, const Snapshot& s) {
  return session.tokenizer() ? spansOf(session.tokenizer()->decodeEach(s.ids)) : std::vector<TokenSpan>{};
}

}  // namespace

ComparePanel::ComparePanel() {
  shippedModels_ = session::modelFolders(TSCOPE_SOURCE_DIR "/assets/models");
  for (const std::string& path : shippedModels_) {  // their kinds, for the two-models case
    ModelConfig config;
    try {
      std::ifstream in(std::filesystem::path(path) / "config.json");
      config = configFromJson(nlohmann::json::parse(in));
    } catch (const std::exception&) {
      config.vocab_size = -1;  // unreadable: never chosen first
    }
    shippedConfigs_.push_back(config);
  }
}

void ComparePanel::drawSetup(PanelContext& ctx) {
  ViewSelection& v = ctx.state;
  const std::string leftPath = ctx.session.modelPath();
  ImGui::TextUnformatted("Compare:");
  ImGui::SameLine();
  if (ImGui::Button("Two models, one prompt")) {
    // Another shipped model of the same kind, one with the left's vocabulary first (the KL then compares token by token).
    const ModelConfig& c = ctx.session.config();
    v.compareModel.clear();
    int best = -1;
    for (size_t i = 0; i < shippedModels_.size(); ++i) {
      const ModelConfig& o = shippedConfigs_[i];
      if (shippedModels_[i] == leftPath || o.masked_lm != c.masked_lm || o.isEncoderDecoder() != c.isEncoderDecoder()) continue;
      const int score = o.vocab_size == c.vocab_size ? 2 : 1;
      if (score > best) {
        best = score;
        v.compareModel = shippedModels_[i];
      }
    }
    v.comparePromptLinked = true;
    v.compareWhatIfs = {};
  }
  recordItem(ctx.shared, "compare_two_models");
  sameLineIfFits("One model, two prompts");
  if (ImGui::Button("One model, two prompts")) {
    v.compareModel.clear();
    v.comparePromptLinked = false;
    v.compareWhatIfs = {};
  }
  recordItem(ctx.shared, "compare_two_prompts");
  sameLineIfFits("With and without a what-if");
  if (ImGui::Button("With and without a what-if")) {
    v.compareModel.clear();
    v.comparePromptLinked = true;
    const ModelConfig& c = ctx.session.config();
    v.compareWhatIfs = {};
    for (WhatIfKind kind : {WhatIfKind::NoCausalMask, WhatIfKind::NoPositions, WhatIfKind::NoScale})
      if (whatIfProblem(WhatIf{kind, 0}, c).empty()) {
        v.compareWhatIfs.items.push_back(WhatIf{kind, 0});
        break;
      }
  }
  recordItem(ctx.shared, "compare_what_if_case");

  // The right side: its model, its prompt, its what-ifs.
  ImGui::TextUnformatted("Right side:");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  const std::string shown = v.compareModel.empty() ? "the left's model (" + modelDisplayName(leftPath) + ")" : modelDisplayName(v.compareModel);
  if (ImGui::BeginCombo("##compare_model", shown.c_str(), ImGuiComboFlags_HeightLargest)) {
    if (ImGui::Selectable("the left's model", v.compareModel.empty())) v.compareModel.clear();
    for (const std::string& path : shippedModels_)
      if (ImGui::Selectable(modelDisplayName(path).c_str(), path == v.compareModel)) v.compareModel = path;
    ImGui::EndCombo();
  }
  recordItem(ctx.shared, "compare_model");
  sameLineIfFits("same prompt", ImGui::GetFrameHeight());
  ImGui::Checkbox("same prompt", &v.comparePromptLinked);
  recordItem(ctx.shared, "compare_prompt_linked");
  if (!v.comparePromptLinked) {
    sameLineIfFits("", ImGui::GetFontSize() * 16);
    ImGui::SetNextItemWidth(std::max(ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 12, ImGui::GetFontSize() * 16));
    ImGui::InputText("##compare_prompt", &v.comparePrompt);
    recordItem(ctx.shared, "compare_prompt");
  }
  if (Session* right = right_.session()) {
    sameLineIfFits("What if (8 on)...");
    drawWhatIfMenu(whatIfMenu_, v.compareWhatIfs, right->config(), ctx.shared, "compare_what_if");
  }
}

void ComparePanel::postRight(PanelContext& ctx) {
  const ViewSelection& v = ctx.state;
  right_.want(v.compareModel.empty() ? ctx.session.modelPath() : v.compareModel, ctx.session.backendChoice());
  Session* right = right_.session();
  if (!right) return;
  AppState side = ctx.state;  // the right side: the view's needs and knobs, its own model inputs
  static_cast<ForwardInputs&>(side) = ForwardInputs{};
  side.prompt = v.comparePromptLinked ? ctx.state.prompt : v.comparePrompt;
  side.source = ctx.state.source;
  side.whatIfs = v.compareWhatIfs;
  keepFittingWhatIfs(side.whatIfs, right->config());
  static_cast<SessionScratch&>(side) = SessionScratch{};
  side.layer = std::clamp(side.layer, 0, right->config().n_layer - 1);
  right_.post(requestFor(side, right->config()));
}

void ComparePanel::drawMaps(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession) {
  const ModelConfig &lc = ctx.session.config(), &rc = rightSession.config();
  AppState& st = ctx.state;
  layerHeadSliders(&ctx.shared, {.region = "compare"}, st.layer, std::max(lc.n_layer, rc.n_layer), st.head, std::max(lc.n_head, rc.n_head));
  const Snapshot* sides[2] = {&left, &right};
  const ModelConfig* configs[2] = {&lc, &rc};
  if (builtLeft_ != left.id || builtRight_ != right.id || builtLayer_ != st.layer || builtHead_ != st.head) {
    mapsNote_.clear();
    for (int i = 0; i < 2; ++i) {
      shown_[i].clear();
      labels_[i].clear();
      const Snapshot& s = *sides[i];
      const auto maps = st.layer < configs[i]->n_layer && st.head < configs[i]->n_head ? s.maps(st.layer) : std::nullopt;
      if (!maps) {
        mapsNote_ += std::string(i ? "right" : "left") + ": no layer " + std::to_string(st.layer) + " head " + std::to_string(st.head) + ". ";
        continue;
      }
      shown_[i] = attentionShown(*maps->rows, configAsRun(*configs[i], s.request.whatIfs), maps->index, st.head, false, false);
      const int T = maps->rows->rows();
      maps_[i].setData(ctx.renderer, shown_[i].data(), T, T, 0.0f, 1.0f, Colormap::Perceptual);
      for (int t = 0; t < T; ++t) labels_[i].push_back(tokenLabel(s.tokenText[t], 10));
    }
    difference_ = {};
    if (!shown_[0].empty() && !shown_[1].empty()) {
      difference_ = mapDifference(shown_[0], (int)labels_[0].size(), shown_[1], (int)labels_[1].size(), left.ids == right.ids,
                                  spans(ctx.session, left), spans(rightSession, right));
      const int T = (int)labels_[0].size();
      const float range = std::max(1e-6f, (float)difference_.maxAbs);
      if (!difference_.difference.empty()) maps_[2].setData(ctx.renderer, difference_.difference.data(), T, T, -range, range, Colormap::Diverging);
    }
    builtLeft_ = left.id;
    builtRight_ = right.id;
    builtLayer_ = st.layer;
    builtHead_ = st.head;
  }
  const float width = ImGui::GetContentRegionAvail().x / 3 - ImGui::GetStyle().ItemSpacing.x;
  const char* titles[3] = {"left", "right", "right - left"};
  const char* regions[3] = {"compare_left_map", "compare_right_map", "compare_difference"};
  for (int i = 0; i < 3; ++i) {
    if (i) ImGui::SameLine();
    ImGui::BeginGroup();
    ImGui::TextUnformatted(titles[i]);
    const std::vector<std::string>& labels = labels_[i == 1 ? 1 : 0];
    const bool has = i < 2 ? !shown_[i].empty() : !difference_.difference.empty();
    if (!has) {
      ImGui::Dummy(ImVec2(width, ImGui::GetFontSize()));
      ImGui::EndGroup();
      continue;
    }
    const int T = static_cast<int>(labels.size());
    const float labelWidth = TokenHeatmap::labelWidthFor(labels, ImGui::GetFontSize() * 5);
    const float cell = TokenHeatmap::squareCell(ImVec2(width, std::max(ImGui::GetContentRegionAvail().y * 0.55f, ImGui::GetFontSize() * 8)), T, T,
                                                labelWidth, ImGui::GetFontSize() * 1.5f);
    TokenHeatmapStyle style{.rowLabels = &labels,
                            .labelWidth = labelWidth,
                            .colLabels = &labels,
                            .colIndicesWhenNarrow = true,
                            .shared = &ctx.shared,
                            .region = regions[i]};
    const std::vector<float>& values = i < 2 ? shown_[i] : difference_.difference;
    style.readout = [&values, &labels, T](int row, int col) {
      if (col < 0) return std::string();
      char text[96];
      std::snprintf(text, sizeof text, "%s -> %s: %+.3f", labels[row].c_str(), labels[col].c_str(), values[(size_t)row * T + col]);
      return std::string(text);
    };
    maps_[i].draw(ctx.renderer, ImVec2(cell, cell), style);
    ImGui::EndGroup();
  }
  ImGui::TextDisabled("%s%s", mapsNote_.c_str(), difference_.note.c_str());
  if (!difference_.difference.empty()) {
    const int T = static_cast<int>(labels_[0].size());
    // Both sides and their difference: (3, T, T) = left, right (as lined up), right - left.
    std::vector<float> stack;
    for (const std::vector<float>* m : {&shown_[0], &difference_.right, &difference_.difference}) stack.insert(stack.end(), m->begin(), m->end());
    for (float& v : stack) v = std::isfinite(v) ? v : 0.0f;  // a masked cell (grey on screen) is a probability of 0, as the CLI writes it
    ctx.shared.exportable = {
        "compare_l" + std::to_string(st.layer) + "_h" + std::to_string(st.head) + "_left_right_difference", std::move(stack), 3 * T, T, {3, T, T}};
  } else {
    ctx.shared.exportNote = difference_.note.empty() ? mapsNote_ : difference_.note;
  }
}

void ComparePanel::drawNextTokens(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession) {
  const int Vl = ctx.session.config().vocab_size, Vr = rightSession.config().vocab_size;
  const std::span<const float> ll = lastRow(left.trace.logits, Vl), lr = lastRow(right.trace.logits, Vr);
  nlohmann::json& facts = ctx.shared.facts["compare"];
  std::string klLine;
  if (Vl == Vr && !ll.empty() && !lr.empty()) {
    const double kl = klDivergence(ll, lr);
    char text[96];
    std::snprintf(text, sizeof text, "KL(left || right) of the next token: %.4f nats", kl);
    klLine = text;
    facts["kl"] = kl;
  } else {
    klLine = "no KL: the two models have different vocabularies (" + std::to_string(Vl) + " and " + std::to_string(Vr) + " tokens)";
    facts["kl_missing"] = klLine;
  }
  ImGui::TextUnformatted(klLine.c_str());
  recordItem(ctx.shared, "compare_kl");
  Session* sessions[2] = {&ctx.session, &rightSession};
  const std::vector<TokenProbability> top[2] = {topNextTokens(ll, 5), topNextTokens(lr, 5)};
  for (int i = 0; i < 2; ++i) {
    nlohmann::json list = nlohmann::json::array();
    for (const TokenProbability& t : top[i]) list.push_back({{"id", t.id}, {"p", t.probability}});
    facts[i ? "right_next" : "left_next"] = list;
  }
  if (ImGui::BeginTable("compare_next", 2, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableSetupColumn("left: next token");
    ImGui::TableSetupColumn("right: next token");
    ImGui::TableHeadersRow();
    for (int r = 0; r < 5; ++r) {
      ImGui::TableNextRow();
      for (int i = 0; i < 2; ++i) {
        ImGui::TableSetColumnIndex(i);
        if (r < (int)top[i].size()) ImGui::Text("%-16s %.3f", tokenText(*sessions[i], top[i][r].id), top[i][r].probability);
      }
    }
    ImGui::EndTable();
  }
}

void ComparePanel::drawLayers(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession) {
  const Snapshot* sides[2] = {&left, &right};
  Session* sessions[2] = {&ctx.session, &rightSession};
  const int layers = std::max(left.trace.L, right.trace.L);
  if (ImGui::BeginTable("compare_lens", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_ScrollY,
                        ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * std::min(layers + 2, 8)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("layer (logit lens, last token)");
    ImGui::TableSetupColumn("left");
    ImGui::TableSetupColumn("right");
    ImGui::TableHeadersRow();
    for (int l = 0; l < layers; ++l) {
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::Text("%d", l);
      for (int i = 0; i < 2; ++i) {
        const Trace& t = sides[i]->trace;
        ImGui::TableSetColumnIndex(i + 1);
        if (l >= t.L || t.lensK == 0 || t.lensPositions.empty()) continue;
        const size_t at = ((size_t)l * t.lensPositions.size() + t.lensPositions.size() - 1) * t.lensK;
        ImGui::Text("%s %.3f", tokenText(*sessions[i], t.lensIds[at]), t.lensProbs[at]);
      }
    }
    ImGui::EndTable();
  }
  // The heads of the selected layer (or of every layer): entropy and the distances to the two
  // patterns, side by side. A layer whose maps are not held (the map memory cap) says so.
  ImGui::Checkbox("every layer##compare_every_layer", &everyLayer_);
  recordItem(ctx.shared, "compare_every_layer");
  ImGui::SameLine();
  const int selected = ctx.state.layer;
  if (everyLayer_)
    ImGui::TextWrapped(
        "Every layer's heads: entropy (nats), and how far each is from the previous-token and first-token patterns (0: exactly, 1: not at all)");
  else
    ImGui::TextWrapped(
        "Layer %d's heads: entropy (nats), and how far each is from the previous-token and first-token patterns (0: exactly, 1: not at all)",
        selected);
  const int first = everyLayer_ ? 0 : selected, last = everyLayer_ ? layers - 1 : selected;
  nlohmann::json list = nlohmann::json::array();
  const ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp | (everyLayer_ ? ImGuiTableFlags_ScrollY : 0);
  const float height = everyLayer_ ? ImGui::GetTextLineHeightWithSpacing() * 12 : 0;
  if (ImGui::BeginTable("compare_heads", 8, flags, ImVec2(0, height))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* name : {"layer", "head", "left entropy", "left prev", "left first", "right entropy", "right prev", "right first"})
      ImGui::TableSetupColumn(name);
    ImGui::TableHeadersRow();
    for (int layer = first; layer <= last; ++layer) {
      std::vector<HeadPattern> patterns[2];
      bool held[2] = {false, false};
      for (int i = 0; i < 2; ++i)
        if (const auto maps = layer < sessions[i]->config().n_layer ? sides[i]->maps(layer) : std::nullopt) {
          patterns[i] = layerPatterns(*maps->rows, maps->index);
          held[i] = true;
        }
      const int heads = std::max({(int)patterns[0].size(), (int)patterns[1].size(), 1});
      for (int h = 0; h < heads; ++h) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::Text("%d", layer);
        ImGui::TableSetColumnIndex(1);
        ImGui::Text("%d", h);
        nlohmann::json row = {{"layer", layer}, {"head", h}};
        for (int i = 0; i < 2; ++i) {
          ImGui::TableSetColumnIndex(2 + 3 * i);
          if (h >= (int)patterns[i].size()) {
            if (h == 0) ImGui::TextDisabled(!held[i] && layer < sessions[i]->config().n_layer ? "(maps not held)" : "(no such layer)");
            continue;
          }
          const HeadPattern& p = patterns[i][h];
          ImGui::Text("%.3f", p.entropy);
          ImGui::TableSetColumnIndex(3 + 3 * i);
          ImGui::Text("%.3f", p.previousToken);
          ImGui::TableSetColumnIndex(4 + 3 * i);
          ImGui::Text("%.3f", p.firstToken);
          row[i ? "right" : "left"] = {p.entropy, p.previousToken, p.firstToken};
        }
        list.push_back(row);
      }
    }
    ImGui::EndTable();
  }
  ctx.shared.facts["compare"]["heads"] = list;
  ctx.shared.facts["compare"]["heads_every_layer"] = everyLayer_;
}

void ComparePanel::drawArchitecture(PanelContext& ctx, const Snapshot& left, const Snapshot& right, Session& rightSession) {
  const std::vector<ArchitectureRow> rows =
      architectureRows(ctx.session.config(), rightSession.config(), (int)left.ids.size(), (int)right.ids.size());
  nlohmann::json differing = nlohmann::json::array();
  if (ImGui::BeginTable("compare_architecture", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) {
    for (const char* name : {"architecture and cost (differences marked)", "left", "right"}) ImGui::TableSetupColumn(name);
    ImGui::TableHeadersRow();
    for (const ArchitectureRow& row : rows) {
      ImGui::TableNextRow();
      if (row.differs) {
        differing.push_back(row.name);
        ImGui::PushStyleColor(ImGuiCol_Text, kInterventionColor);
      }
      ImGui::TableSetColumnIndex(0);
      ImGui::TextUnformatted(row.name.c_str());
      ImGui::TableSetColumnIndex(1);
      ImGui::TextUnformatted(row.left.c_str());
      ImGui::TableSetColumnIndex(2);
      ImGui::TextUnformatted(row.right.c_str());
      if (row.differs) ImGui::PopStyleColor();
    }
    ImGui::EndTable();
  }
  recordItem(ctx.shared, "compare_architecture");
  ctx.shared.facts["compare"]["architecture_differs"] = differing;
}

void ComparePanel::draw(PanelContext& ctx) {
  drawSetup(ctx);
  postRight(ctx);
  const ViewSelection& v = ctx.state;
  nlohmann::json& facts = ctx.shared.facts["compare"];
  facts = {{"right_model", v.compareModel},   {"prompt_linked", v.comparePromptLinked},
           {"right_prompt", v.comparePrompt}, {"right_what_ifs", formatWhatIfs(v.compareWhatIfs)},
           {"loading", right_.loading()},     {"problem", right_.problem()}};
  if (!right_.problem().empty()) ImGui::TextColored(ImVec4(0.9f, 0.25f, 0.2f, 1), "%s", right_.problem().c_str());
  if (!right_.loading().empty()) ImGui::TextDisabled("loading the right side: %s ...", right_.loading().c_str());
  Session* rightSession = right_.session();
  if (rightSession) {  // what the second model costs (two 0.5B checkpoints side by side: bench/RESULTS.md)
    const Weights& w = rightSession->weights();
    ImGui::TextDisabled("Right side: %s in its own session: %s of weights%s, its own KV cache.", modelDisplayName(rightSession->modelPath()).c_str(),
                        formatBytes((double)w.heldBytes()).c_str(), w.hasPacked() ? " (its 16-bit matrices read in place from the file)" : "");
    facts["right_weight_bytes"] = rightSession->weights().heldBytes();
  }
  const std::shared_ptr<const Snapshot> right = right_.latest();
  const Snapshot* left = ctx.snapshot;
  if (!left || !rightSession || !right || left->ids.empty() || right->ids.empty() || !left->error.empty() || !right->error.empty()) {
    const std::string why = left && !left->error.empty()     ? "left: " + left->error
                            : right && !right->error.empty() ? "right: " + right->error
                                                             : std::string("computing...");
    ImGui::TextDisabled("%s", why.c_str());
    facts["waiting"] = why;
    ctx.shared.exportNote = why;
    return;
  }
  facts["left_snapshot"] = left->id;
  facts["right_snapshot"] = right->id;
  facts["right_what_ifs_run"] = formatWhatIfs(right->request.whatIfs);
  facts["right_prompt_run"] = right->request.prompt;
  facts["left_prompt_run"] = left->request.prompt;
  facts["left_tokens"] = left->ids.size();
  facts["right_tokens"] = right->ids.size();
  facts["same_tokens"] = left->ids == right->ids;
  drawMaps(ctx, *left, *right, *rightSession);
  facts["difference_note"] = difference_.note;
  facts["max_abs_difference"] = difference_.maxAbs;
  facts["aligned"] = difference_.aligned;
  drawNextTokens(ctx, *left, *right, *rightSession);
  drawLayers(ctx, *left, *right, *rightSession);
  drawArchitecture(ctx, *left, *right, *rightSession);
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeComparePanel() { return std::make_unique<ComparePanel>(); }

}  // namespace tscope::gui
