// Architecture & cost panel: an editable copy of the loaded config (or a published shape: GPT-3,
// Brown et al. 2020, Table 2.1; the 2017 Transformer; Switch-C) with its block diagram, parameters
// per component, FLOPs per token and memory at a chosen context length, and Vaswani et al.'s
// Table 2 beside tscope's counts. Edits are checked with validateConfig; an invalid one
// shows its message (here and in the status bar) and the numbers stay on the last valid config.
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>

#include "app/gui/widgets/block_diagram.h"
#include "app/gui/widgets/encoder_decoder_diagram.h"
#include "app/gui/panels/architecture/cost_tables.h"
#include "app/gui/panels/architecture/published_tables.h"
#include "model/theory/cost.h"
#include "model/theory/presets.h"
#include "model/theory/slide_tables.h"
#include "app/gui/panels/architecture/panel_architecture.h"

#include <memory>
#include "app/gui/widgets/plot.h"  // formatCount

namespace tscope::gui {

namespace {

constexpr int kCustom = -2, kLoaded = -1;
// Names in enum order (config.h).
constexpr const char* kPositionNames[] = {"learned", "sinusoidal", "rope", "alibi", "none"};
constexpr const char* kActivationNames[] = {"gelu (tanh)", "gelu (erf)", "relu", "swiglu"};
constexpr const char* kNormNames[] = {"layernorm", "rmsnorm", "none"};
constexpr const char* kPlacementNames[] = {"pre-norm", "post-norm"};

void sectionTitle(const char* title) {
  ImGui::Spacing();
  ImGui::TextUnformatted(title);
  ImGui::Separator();
}

template <typename Enum, size_t N>
bool enumCombo(const char* label, Enum& value, const char* const (&names)[N]) {
  int index = static_cast<int>(value);
  ImGui::SetNextItemWidth(-FLT_MIN);
  if (!ImGui::Combo(label, &index, names, static_cast<int>(N))) return false;
  value = static_cast<Enum>(index);
  return true;
}

// Label cell, then the widget cell of a 4-column (label, widget, label, widget) table.
void labelCell(const char* label, const char* help) {
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(label);
  if (help && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
  ImGui::TableNextColumn();
  ImGui::SetNextItemWidth(-FLT_MIN);
}

bool intField(const char* label, const char* id, int& value, int step, int fastStep, const char* help) {
  labelCell(label, help);
  return ImGui::InputInt(id, &value, step, fastStep);
}

bool drawConfigEditor(ModelConfig& c, SharedView& shared) {
  bool changed = false;
  if (!ImGui::BeginTable("editor", 4, ImGuiTableFlags_SizingStretchProp)) return false;
  ImGui::TableSetupColumn("l1", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("w1", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("l2", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("w2", ImGuiTableColumnFlags_WidthStretch);
  changed |= intField("layers L", "##L", c.n_layer, 1, 8, "n_layer: number of transformer blocks");
  changed |= intField("d_model C", "##C", c.n_embd, 1, 64, "n_embd: width of the residual stream");
  changed |= intField("heads H", "##H", c.n_head, 1, 4, "n_head: query heads; must divide d_model unless head dim D is set");
  changed |= intField("head dim D", "##D", c.head_dim, 1, 16,
                      "head_dim: width of each head (0 = C / H); q, k, v and the heads' output are H D wide (Qwen3: 128 at every size)");
  int kv = c.kvHeads();
  if (intField("kv heads Hkv", "##Hkv", kv, 1, 4, "n_kv_head: key/value heads; must divide H (1 = multi-query, H = multi-head)")) {
    c.n_kv_head = kv;
    changed = true;
  }
  changed |= intField("vocab V", "##V", c.vocab_size, 1, 1000, "vocab_size");
  changed |= intField("context n_ctx", "##ctx", c.n_positions, 1, 256, "n_positions: the longest context");
  int ff = c.dFF();
  if (intField("d_ff F", "##F", ff, 1, 256, "hidden width of the feed-forward (4 C by default)")) {
    c.d_ff = ff;
    changed = true;
  }
  changed |= intField("window w", "##w", c.attention_window, 1, 64, "attention_window: keys within w positions (0 = all)");
  changed |= intField("experts E", "##E", c.n_experts, 1, 4, "n_experts: 0 = a dense MLP");
  ImGui::BeginDisabled(!c.isMoe());
  changed |= intField("top-k", "##k", c.moe_top_k, 1, 1, "moe_top_k: experts each token uses");
  changed |= intField("shared expert", "##Fs", c.moe_shared_expert_d_ff, 1, 256,
                      "moe_shared_expert_d_ff: hidden width of an expert every token runs beside the routed ones, gated by a sigmoid "
                      "(Qwen2-MoE); 0 = none");
  recordItem(shared, "arch_shared_expert");
  ImGui::EndDisabled();
  labelCell("positions", "position_encoding");
  changed |= enumCombo("##pos", c.position_encoding, kPositionNames);
  labelCell("activation", "activation_function");
  changed |= enumCombo("##act", c.activation, kActivationNames);
  labelCell("norm", "norm");
  changed |= enumCombo("##norm", c.norm, kNormNames);
  labelCell("placement", "norm_position: pre = x + f(N(x)); post = N(x + f(x))");
  int placement = c.pre_norm ? 0 : 1;
  if (enumCombo("##place", placement, kPlacementNames)) {
    c.pre_norm = placement == 0;
    changed = true;
  }
  labelCell("residual", "residual: off = each sublayer replaces the stream instead of adding to it (z = f(N(x)))");
  changed |= ImGui::Checkbox("x + f(x)##residual", &c.residual);
  recordItem(shared, "arch_residual");
  labelCell("embeddings", nullptr);
  changed |= ImGui::Checkbox("tied unembedding", &c.tie_word_embeddings);
  labelCell("attention", nullptr);
  changed |= ImGui::Checkbox("causal", &c.causal);
  labelCell("q/k norm", "qk_norm: RMSNorm of every head's q and k before RoPE (Qwen3, OLMo 2)");
  changed |= ImGui::Checkbox("per head##qk", &c.qk_norm);
  ImGui::EndTable();
  return changed;
}

void selectPreset(ArchitectureView& v, const ModelConfig& loaded, int preset) {
  v.preset = preset;
  v.edited = preset >= 0 ? presetConfig(publishedPresets()[preset]) : loaded;
  v.contextLength = v.edited.n_positions;
}

void drawPresetBar(PanelContext& ctx, ArchitectureView& v) {
  const ModelConfig& loaded = ctx.session.config();
  const auto& presets = publishedPresets();
  const std::string loadedName = "loaded model (" + std::filesystem::path(ctx.session.modelPath()).filename().string() + ")";
  const std::string preview = v.preset == kCustom ? "custom (edited)" : v.preset == kLoaded ? loadedName : presets[v.preset].name;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 16);
  if (ImGui::BeginCombo("start from", preview.c_str())) {
    if (ImGui::Selectable(loadedName.c_str(), v.preset == kLoaded)) selectPreset(v, loaded, kLoaded);
    for (int i = 0; i < static_cast<int>(presets.size()); ++i) {
      const std::string item = presets[i].name + "  (" + formatCount(presets[i].publishedParameters) + ")";
      if (ImGui::Selectable(item.c_str(), v.preset == i)) selectPreset(v, loaded, i);
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::Button("reset to loaded model")) selectPreset(v, loaded, kLoaded);
  if (v.preset >= 0) {
    const ModelPreset& p = presets[v.preset];
    const double counted = static_cast<double>(countParameters(presetConfig(p)).total);
    ImGui::TextWrapped("%s as published: %s parameters, L = %d, d_model = %d, %d heads of %d. countParameters: %s (%+.1f%%). %s. Source: %s.",
                       p.name.c_str(), formatCount(p.publishedParameters).c_str(), p.n_layer, p.d_model, p.n_head, p.d_head,
                       formatCount(counted).c_str(), 100.0 * (counted - p.publishedParameters) / p.publishedParameters, familyDescription(p).c_str(),
                       p.source.c_str());
    if (!p.note.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.2f, 1.0f));
      ImGui::TextWrapped("Not buildable as printed: %s. validateConfig on the printed shape says: %s.", p.note.c_str(),
                         validateConfig(printedConfig(p)).c_str());
      ImGui::PopStyleColor();
    }
  }
}

// Context-length shortcuts: an image as tokens (ViT's 16x16 patches, and every pixel a token).
void drawImageButtons(ArchitectureView& v) {
  const int patches = imagePatchTokens(224, 16), pixels = imagePatchTokens(224, 1);
  if (ImGui::SmallButton("224^2 image, 16x16 patches: n = 196")) v.contextLength = patches;
  ImGui::SameLine();
  if (ImGui::SmallButton("224^2 pixels as tokens: n = 50,176")) v.contextLength = pixels;
}

// The editor, its validation line, the context-length slider and the cost tables.
void drawNumbers(PanelContext& ctx, ArchitectureView& v) {
  if (drawConfigEditor(v.edited, ctx.shared)) {
    v.preset = kCustom;
    const std::string problem = validateConfig(v.edited);
    if (problem != v.problem) ctx.message = problem.empty() ? "architecture: the config is valid again" : "architecture: " + problem;
    v.problem = problem;
    if (problem.empty()) v.lastValid = v.edited;
  }
  if (!v.problem.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.35f, 0.3f, 1.0f));
    ImGui::TextWrapped("Invalid: %s. The numbers below are for the last valid config.", v.problem.c_str());
    ImGui::PopStyleColor();
  }
  const ModelConfig& c = v.lastValid;
  nlohmann::json& facts = ctx.shared.facts["architecture"];
  facts = {{"parameters", countParameters(c).total},
           {"problem", v.problem},
           {"context", v.contextLength},
           {"preset", v.preset >= 0 ? publishedPresets()[v.preset].name : ""}};
  for (const int patch : {16, 1}) {
    const int n = imagePatchTokens(224, patch);
    facts["image_tokens"].push_back({{"patch", patch}, {"n", n}, {"attention_map_bytes_fp32", attentionMapBytes(c, n, 4)}});
  }
  if (v.preset >= 0) drawSlideFigures(publishedPresets()[v.preset], facts);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
  ImGui::SliderInt("context length n (tokens)", &v.contextLength, 1, 1 << 17, "%d", ImGuiSliderFlags_Logarithmic);
  v.contextLength = std::clamp(v.contextLength, 1, 1 << 17);
  if (v.contextLength > c.n_positions) {
    ImGui::SameLine();
    ImGui::TextDisabled("(longer than this model's n_ctx = %d)", c.n_positions);
  }
  drawImageButtons(v);
  sectionTitle("Parameters");
  drawParameterTable(c, v.contextLength);
  sectionTitle("Compute per token");
  drawFlopsTable(c, v.contextLength);
  sectionTitle("Memory");
  drawMemoryTable(c, v.contextLength);
  sectionTitle("Attention Is All You Need, Table 2 (Vaswani et al. 2017)");
  drawTranslationTable(facts);
  sectionTitle("GPT-3 specifications: the slide and Table 2.1 (Brown et al. 2020)");
  drawGpt3Specs(facts);
}

}  // namespace

void ArchitecturePanel::setEdited(const ModelConfig& config) {
  ArchitectureView& v = view_;
  v.initialized = true;
  v.preset = kCustom;
  v.edited = config;
  v.contextLength = config.n_positions;
  v.problem = validateConfig(config);
  if (v.problem.empty()) v.lastValid = config;
}

void ArchitecturePanel::draw(PanelContext& ctx) {
  ArchitectureView& v = view_;
  if (!v.initialized) {
    selectPreset(v, ctx.session.config(), kLoaded);
    v.lastValid = v.edited;
    v.initialized = true;
  }
  bool& showFamilies = ctx.state.archFamilies;
  ImGui::Checkbox("The three families (GPT, BERT, T5)", &showFamilies);
  recordItem(ctx.shared, "arch_families");
  ctx.shared.facts["arch_families"] = showFamilies;
  showFamilies_ = showFamilies;
  if (showFamilies) {
    ImGui::Separator();
    families_.draw(ctx);
    return;
  }
  ImGui::SameLine();
  drawPresetBar(ctx, v);
  // Side by side when the window is wide for its text size; stacked otherwise (large text).
  const float fontSize = ImGui::GetFontSize();
  const bool sideBySide = ImGui::GetContentRegionAvail().x > fontSize * 75;
  if (sideBySide) {
    if (!ImGui::BeginTable("architecture", 2, ImGuiTableFlags_BordersInnerV)) return;
    ImGui::TableSetupColumn("diagram", ImGuiTableColumnFlags_WidthFixed, std::max(fontSize * 16, ImGui::GetContentRegionAvail().x * 0.36f));
    ImGui::TableSetupColumn("numbers", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableNextColumn();
  }
  const float diagramWidth = std::min(ImGui::GetContentRegionAvail().x * (sideBySide ? 1.0f : 0.55f), fontSize * 40);
  ImGui::BeginGroup();
  ImGui::TextUnformatted(v.problem.empty() ? "Block diagram" : "Block diagram (last valid config)");
  if (v.lastValid.isEncoderDecoder()) drawEncoderDecoderDiagram(v.lastValid, ImVec2(diagramWidth, 0), {}, false);
  else drawBlockDiagram(v.lastValid, diagramWidth);
  ImGui::EndGroup();
  // The share bars go under the diagram, or beside it when there is room (stacked layout).
  const float besideWidth = ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x - fontSize * 2;
  const bool barsBeside = !sideBySide && besideWidth > fontSize * 16;
  if (barsBeside) ImGui::SameLine(0, fontSize * 2);
  else ImGui::Spacing();
  ImGui::BeginGroup();
  drawCostBars(v.lastValid, v.contextLength, barsBeside ? std::min(besideWidth, fontSize * 30) : diagramWidth);
  ImGui::EndGroup();
  if (sideBySide) ImGui::TableNextColumn();
  else ImGui::Separator();
  drawNumbers(ctx, v);
  if (sideBySide) ImGui::EndTable();
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeArchitecturePanel() { return std::make_unique<ArchitecturePanel>(); }

}  // namespace tscope::gui
