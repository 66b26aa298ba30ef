// Training panel: on the left a preset (task, architecture, size) and the fields a student edits,
// checked on every edit with validateTrainSetup, the run controls and progress, and saving the
// model or opening it in the explorer; on the right the loss and learning-rate curves and the
// timeline of snapshots (charts in training_charts.cpp). Training runs in TrainingSession.
#include <imgui.h>

#include <imgui_stdlib.h>

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <filesystem>

#include "model/theory/cost.h"
#include "model/nn/efficient_attention.h"
#include "model/train/train_presets.h"
#include "app/gui/panels/training/panel_training.h"

#include <memory>
#include "app/gui/widgets/plot.h"
#include "app/gui/panels/training/training_charts.h"

namespace tscope::gui {

namespace {

const ImVec4 kErrorColour(0.9f, 0.3f, 0.25f, 1.0f);

std::string defaultSaveDir(const TrainPreset& preset) {
  return (std::filesystem::path(TSCOPE_SOURCE_DIR) / ".cache" / "training" / preset.key).string();
}

void selectPreset(TrainingPanelView& v, int index) {
  const TrainPreset& p = trainPresets()[index];
  v.preset = index;
  v.config = p.config;
  v.data = p.data;
  if (!v.saveDirEdited) v.saveDir = defaultSaveDir(p);
}

// Fields that follow the ones a student edits, scaled as in the preset: the lowest learning rate,
// the warm-up and the evaluation interval.
void deriveSchedule(TrainingPanelView& v) {
  const TrainConfig& p = trainPresets()[v.preset].config;
  TrainConfig& c = v.config;
  c.minLr = c.maxLr * (p.minLr / p.maxLr);
  const TrainConfig scaled = configWithSteps(p, c.maxSteps);
  c.warmupSteps = scaled.warmupSteps;
  c.evalEvery = scaled.evalEvery;
}

// One row of the two-column field table: the label (with a tooltip) and an integer field.
bool intRow(const char* label, const char* id, int& value, int step, const char* help) {
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(label);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", help);
  ImGui::TableNextColumn();
  ImGui::SetNextItemWidth(-FLT_MIN);
  return ImGui::InputInt(id, &value, step, step * 8);
}

// The attention the model trains with (config.attention_variant): the variants that have a
// backward, and the knob of the chosen one.
bool drawAttentionRow(SharedView& shared, ModelConfig& m) {
  AttentionVariantParams& a = m.attention_variant;
  bool changed = false;
  ImGui::TableNextColumn();
  ImGui::TextUnformatted("attention");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "attention_variant: exact softmax, or one of the lecture's efficient answers (the Efficient attention tab "
        "compares them on any model)");
  ImGui::TableNextColumn();
  ImGui::SetNextItemWidth(-FLT_MIN);
  if (ImGui::BeginCombo("##attention", attentionVariantName(a.variant))) {
    for (AttentionVariant variant : allAttentionVariants()) {
      AttentionVariantParams candidate = a;
      candidate.variant = variant;
      const std::string why = attentionVariantBackwardProblem(candidate);
      const bool trains = why.empty();
      ImGui::BeginDisabled(!trains);
      if (ImGui::Selectable(attentionVariantName(variant), a.variant == variant) && a.variant != variant) {
        a.variant = variant;
        if (variant == AttentionVariant::Window) m.attention_window = 0;  // the window is the variant's knob
        // The ops' defaults (64) would cover a whole task sequence: start where the Brown presets do.
        const AttentionVariantParams defaults;
        if (a.window == defaults.window) a.window = 16;
        if (a.projected == defaults.projected) a.projected = 16;
        changed = true;
      }
      ImGui::EndDisabled();
      recordItem(shared, std::string("training_attention_") + attentionVariantName(variant));
      if (!trains && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("%s", why.c_str());
    }
    ImGui::EndCombo();
  }
  recordItem(shared, "training_attention");
  if (a.variant == AttentionVariant::Window)
    changed |= intRow("window w", "##window", a.window, 4, "each token sees the w tokens up to it (itself included)");
  else if (a.variant == AttentionVariant::Linformer)
    changed |= intRow("projected k", "##projected", a.projected, 4, "keys and values are averaged over k segments of the context");
  else if (a.variant == AttentionVariant::Performer)
    changed |= intRow("features m", "##features", a.features, 16, "random features that estimate exp(q.k / sqrt d)");
  return changed;
}

bool drawFields(SharedView& shared, TrainingPanelView& v, bool locked) {
  TrainConfig& c = v.config;
  DataSpec& d = v.data;
  bool changed = false;
  ImGui::BeginDisabled(locked);
  if (ImGui::BeginTable("fields", 2, ImGuiTableFlags_SizingStretchProp)) {
    ImGui::TableSetupColumn("label", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableSetupColumn("field", ImGuiTableColumnFlags_WidthStretch);
    if (d.dates) {
      changed |= intRow("encoder layers", "##Le", c.model.n_encoder_layer, 1, "n_encoder_layer: blocks of the encoder (bidirectional)");
      changed |= intRow("decoder layers", "##L", c.model.n_layer, 1, "n_layer: blocks of the decoder (self-attention, cross-attention, MLP)");
    } else {
      changed |= intRow("layers L", "##L", c.model.n_layer, 1, "n_layer: transformer blocks");
    }
    changed |= intRow("heads H", "##H", c.model.n_head, 1, "n_head: attention heads per layer; must divide d_model");
    changed |= intRow("d_model C", "##C", c.model.n_embd, 16, "n_embd: width of the residual stream");
    if (c.model.n_experts > 0) {
      changed |= intRow("experts E", "##E", c.model.n_experts, 1, "n_experts: feed-forward experts per layer");
      changed |= intRow("top-k", "##k", c.model.moe_top_k, 1, "moe_top_k: experts each token is routed to");
    }
    if (d.brown) {
      changed |= intRow("BPE vocab", "##V", d.bpeVocab, 256, "tokens in the BPE vocabulary learned on the training documents");
      changed |= intRow("seq len T", "##T", c.seqLen, 16, "tokens per training sequence (the model's context)");
    } else if (d.dates) {
      // (the dates task has no knobs: its vocabulary and lengths are fixed)
    } else if (d.task.task == SyntheticTask::ModularAddition) {
      changed |= intRow("modulus", "##m", d.task.modulus, 1, "a + b = (a + b) mod this");
    } else if (d.task.task == SyntheticTask::Addition) {
      changed |= intRow("digits", "##digits", d.task.digits, 1, "digits of each number added (the sum is written least significant digit first)");
    } else {
      changed |= intRow("symbols", "##V", d.task.vocab, 1, "distinct symbols the sequences are drawn from");
      changed |= intRow("length", "##len", d.task.length, 1, "symbols in each sequence before it is repeated, copied or sorted");
    }
    changed |= drawAttentionRow(shared, c.model);
    changed |= intRow("steps", "##steps", c.maxSteps, 100, "optimizer steps of the whole run");
    changed |= intRow("batch B", "##B", c.batch, 4, "sequences per step");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("learning rate");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("peak learning rate after the warm-up; cosine decay to a tenth of it");
    ImGui::TableNextColumn();
    ImGui::SetNextItemWidth(-FLT_MIN);
    changed |= ImGui::InputFloat("##lr", &c.maxLr, 0, 0, "%.2e");
    ImGui::EndTable();
  }
  ImGui::EndDisabled();
  return changed;
}

void drawPresetChooser(TrainingPanelView& v, bool locked) {
  const auto& presets = trainPresets();
  ImGui::BeginDisabled(locked);
  ImGui::SetNextItemWidth(-FLT_MIN);
  if (ImGui::BeginCombo("##preset", presets[v.preset].name.c_str())) {
    for (int i = 0; i < static_cast<int>(presets.size()); ++i)
      if (ImGui::Selectable(presets[i].name.c_str(), v.preset == i)) selectPreset(v, i);
    ImGui::EndCombo();
  }
  ImGui::EndDisabled();
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", presets[v.preset].description.c_str());
  ImGui::PopStyleColor();
}

void drawRunControls(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view) {
  TrainingSession& training = *ctx.training;
  const TrainingStatus status = view.status;
  const bool active = status == TrainingStatus::Running || status == TrainingStatus::Preparing;
  ImGui::BeginDisabled(!v.problem.empty() || active);
  if (ImGui::Button(status == TrainingStatus::Idle ? "Start" : "Restart")) {
    training.start({trainPresets()[v.preset].name, v.config, v.data, 0});
    v.followLatest = true;
  }
  recordItem(ctx.shared, "training_start");
  nlohmann::json& facts = ctx.shared.facts["training"];
  facts["preset"] = trainPresets()[v.preset].key;
  facts["attention"] = attentionVariantName(v.config.model.attention_variant.variant);
  facts["problem"] = v.problem;
  facts["status"] = toString(status);
  facts["steps_done"] = view.stepsDone;
  if (const char* accuracy = accuracyKey(view.config.model); accuracy && !view.accuracy.empty()) facts[accuracy] = view.accuracy.back();
  facts["run_attention"] = attentionVariantName(view.config.model.attention_variant.variant);
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (status == TrainingStatus::Paused) {
    if (ImGui::Button("Resume")) training.resume();
  } else {
    ImGui::BeginDisabled(status != TrainingStatus::Running);
    if (ImGui::Button("Pause")) training.pause();
    ImGui::EndDisabled();
  }
  ImGui::SameLine();
  ImGui::BeginDisabled(status != TrainingStatus::Running && status != TrainingStatus::Paused);
  if (ImGui::Button("Stop")) training.stop();
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(status == TrainingStatus::Idle);
  if (ImGui::Button("Reset")) training.reset();
  ImGui::EndDisabled();

  const int total = std::max(1, view.totalSteps);
  char overlay[64];
  std::snprintf(overlay, sizeof overlay, "step %d / %d", view.stepsDone, view.totalSteps);
  ImGui::ProgressBar(static_cast<float>(view.stepsDone) / total, ImVec2(-FLT_MIN, 0), overlay);
  if (status != TrainingStatus::Idle && status != TrainingStatus::Preparing) {
    ImGui::Text("%s tokens/s   elapsed %s", formatCount(view.tokensPerSecond).c_str(), formatDuration(view.elapsedSeconds).c_str());
    if (status == TrainingStatus::Running) {
      ImGui::SameLine();
      ImGui::Text("  ETA %s", formatDuration(view.etaSeconds).c_str());
    }
  }
  if (status == TrainingStatus::Error) ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
  ImGui::TextWrapped("%s: %s", toString(status), view.message.c_str());
  if (status == TrainingStatus::Error) ImGui::PopStyleColor();
  if (!view.dataDescription.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s; %s parameters; %d training %s", view.dataDescription.c_str(), formatCount((double)view.parameters).c_str(), view.threads,
                       view.threads == 1 ? "thread" : "threads");
    ImGui::PopStyleColor();
  }
}

void drawSaveControls(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view) {
  ImGui::TextUnformatted("model directory");
  ImGui::SetNextItemWidth(-FLT_MIN);
  if (ImGui::InputText("##savedir", &v.saveDir)) v.saveDirEdited = true;
  const bool trained = view.status == TrainingStatus::Running || view.status == TrainingStatus::Paused || view.status == TrainingStatus::Done;
  ImGui::BeginDisabled(!trained || v.saveDir.empty());
  if (ImGui::Button("Save model")) {
    ctx.training->save(v.saveDir);
    ++v.savesRequested;
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("writes config.json, model.safetensors, the tokenizer and the optimizer state (a checkpoint)");
  ImGui::SameLine();
  if (ImGui::Button("Open in explorer")) {
    ctx.training->save(v.saveDir);
    v.openAfterSave = ++v.savesRequested;
  }
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("saves the model, loads it into the other panels, and uses the probe sequence as the prompt");
  ImGui::EndDisabled();
  if (v.openAfterSave > 0 && view.saveCount >= v.openAfterSave) {
    if (view.saveError.empty()) {
      ctx.openModel = view.savedDir;
      ctx.openPrompt = view.probeText;
    }
    v.openAfterSave = 0;
  }
  if (view.saveCount > 0) {
    if (!view.saveError.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
      ImGui::TextWrapped("%s", view.saveError.c_str());
      ImGui::PopStyleColor();
    } else {
      ImGui::TextWrapped("saved %s", view.savedDir.c_str());
    }
  }
}

void drawControls(PanelContext& ctx, TrainingPanelView& v, const TrainingView& view) {
  const bool locked = view.status == TrainingStatus::Running || view.status == TrainingStatus::Preparing;
  drawPresetChooser(v, locked);
  ImGui::Separator();
  // Start and its line first: on a 720p projector they stay above the fold; the fields follow.
  v.problem = validateTrainSetup(v.config, v.data);
  if (!v.problem.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", v.problem.c_str());
    ImGui::PopStyleColor();
  } else {
    const ModelConfig m = resolvedModelConfig(v.config, v.data);
    ImGui::TextWrapped("%s parameters, %d x %d tokens per step", formatCount((double)countParameters(m).total).c_str(), v.config.batch,
                       m.n_positions);
  }
  drawRunControls(ctx, v, view);
  ImGui::Separator();
  if (drawFields(ctx.shared, v, locked)) deriveSchedule(v);
  ImGui::Separator();
  drawSaveControls(ctx, v, view);
  if (!view.probeText.empty()) {
    ImGui::Separator();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("Probe sequence (the rows and columns of the attention maps): %s", view.probeText.c_str());
    ImGui::PopStyleColor();
  }
}

}  // namespace

bool TrainingPanel::startPreset(TrainingSession& training, const std::string& preset, int pauseAtStep) {
  const TrainPreset* found = findTrainPreset(preset);
  if (!found) return false;
  TrainingPanelView& v = view_;
  v.initialized = true;
  selectPreset(v, static_cast<int>(found - trainPresets().data()));
  training.start({found->name, found->config, found->data, pauseAtStep});
  return true;
}

void TrainingPanel::showHead(int layer, int head) {
  if (layer >= 0) view_.layer = layer;
  if (head >= 0) view_.head = head;
}

void TrainingPanel::draw(PanelContext& ctx) {
  TrainingPanelView& v = view_;
  if (!ctx.training) return;
  if (!v.initialized) {
    selectPreset(v, 0);
    v.initialized = true;
  }
  const std::shared_ptr<const TrainingView> view = ctx.training->latest();
  const float fontSize = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float controlsWidth = std::clamp(avail.x * 0.24f, fontSize * 18, fontSize * 26);
  ImGui::BeginChild("training_controls", ImVec2(controlsWidth, 0), false);
  drawControls(ctx, v, *view);
  ImGui::EndChild();
  recordItem(ctx.shared, "training_controls");  // the scrolling column (Start is at its top; the fields below may scroll)
  ImGui::SameLine();
  ImGui::BeginChild("training_charts", ImVec2(0, 0), false);
  if (ImGui::BeginTabBar("training_views")) {
    const bool run = ImGui::BeginTabItem("This run", nullptr, subTabFlags(ctx, "training_tab_run"));
    recordItem(ctx.shared, "training_tab_run");
    if (run) {
      drawTrainingCharts(ctx, v, *view);
      ImGui::EndTabItem();
    }
    const bool compare = ImGui::BeginTabItem("Compare runs", nullptr, subTabFlags(ctx, "training_tab_compare"));
    recordItem(ctx.shared, "training_tab_compare");
    if (compare) {
      drawTrainingCompare(ctx, v.compare);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
}

// Registered in app/session/panel_list.h.
std::unique_ptr<Panel> makeTrainingPanel() { return std::make_unique<TrainingPanel>(); }

}  // namespace tscope::gui
