// Session file (de)serialisation with strict type checks on every field.
#include "app/session/session_file.h"
#include "app/session/vision_input.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "model/core/file_check.h"
#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/io/npy.h"

namespace tscope::session {

namespace {
constexpr int kMaxLayersOrHeads = 4096;
constexpr int kVariantCheckTokens = 32768;  // a session's knobs are checked for the longest sequence the lab measures

// "zero" / "mean" / "patch" -> the kind; false for anything else (a JSON string or not).
bool ablationKindFromJson(const nlohmann::json& name, AblationKind& out) {
  return name.is_string() && ablationKindFromName(name.get<std::string>(), out);
}

nlohmann::json interventionsJson(const std::vector<InterventionSpec>& specs) {
  nlohmann::json out = nlohmann::json::array();
  for (const InterventionSpec& spec : specs) {
    nlohmann::json entry = {
        {"layer", spec.layer}, {"head", spec.isMlp() ? nlohmann::json("mlp") : nlohmann::json(spec.head)}, {"kind", ablationKindName(spec.kind)}};
    if (spec.cross) entry["cross"] = true;
    out.push_back(std::move(entry));
  }
  return out;
}

// One entry {"layer": L, "head": H or "mlp", "kind": "zero" | "mean" | "patch"} (and "cross": true for a
// cross-attention head), or why not ("" when fine).
std::string interventionFromJson(const nlohmann::json& entry, InterventionSpec& spec) {
  if (!entry.is_object()) return "not an object";
  auto index = [&](const char* key, int& out) {
    auto it = entry.find(key);
    if (it == entry.end() || !it->is_number_integer() || *it < 0 || *it >= kMaxLayersOrHeads) return false;
    out = it->get<int>();
    return true;
  };
  if (!index("layer", spec.layer)) return "'layer' must be an integer 0.." + std::to_string(kMaxLayersOrHeads - 1);
  auto head = entry.find("head");
  if (head != entry.end() && *head == "mlp") spec.head = -1;
  else if (!index("head", spec.head)) return "'head' must be an integer 0.." + std::to_string(kMaxLayersOrHeads - 1) + " or \"mlp\"";
  auto kind = entry.find("kind");
  if (kind == entry.end() || !ablationKindFromJson(*kind, spec.kind)) return "'kind' must be \"zero\", \"mean\" or \"patch\"";
  if (auto cross = entry.find("cross"); cross != entry.end()) {
    if (!cross->is_boolean()) return "'cross' must be true or false";
    spec.cross = cross->get<bool>();
    if (spec.cross && spec.isMlp()) return "'cross' names a cross-attention head: 'head' must be a number";
  }
  return "";
}

// The valid, distinct entries of the "interventions" array `it`; the bad ones are named in `warning`.
void readInterventions(const nlohmann::json* it, const std::string& path, std::vector<InterventionSpec>& interventions, std::string& warning) {
  if (!it) return;  // absent: kept (a lesson step that does not set it keeps the step before's)
  if (!it->is_array()) throw Error(path + ": field 'interventions' must be an array (got " + std::string(it->type_name()) + ")");
  interventions.clear();  // the list replaces the one before ([] takes every intervention out), as the docs say
  std::string skipped;
  for (size_t i = 0; i < it->size(); ++i) {
    InterventionSpec spec;
    const std::string problem = interventionFromJson((*it)[i], spec);
    if (!problem.empty()) {
      if (skipped.empty()) skipped = "interventions[" + std::to_string(i) + "]: " + problem;
      else skipped += ", [" + std::to_string(i) + "]";
      continue;
    }
    if (std::find(interventions.begin(), interventions.end(), spec) == interventions.end()) interventions.push_back(spec);
  }
  if (!skipped.empty()) warning = path + ": field 'interventions' has entries left out: " + skipped;
}

// The Efficient-attention panel's variant with its knobs, and whether it replaces every layer.
template <class Params, class Bool>
struct EfficientField {
  Params& variant;
  Bool& allLayers;
};

nlohmann::json efficientJson(const AttentionVariantParams& p, bool allLayers) {
  nlohmann::json j = {{"variant", attentionVariantName(p.variant)},
                      {"projection", linformerProjectionName(p.linformerProjection)},
                      {"seed", p.seed},
                      {"all_layers", allLayers}};
  for (const AttentionKnob& knob : attentionKnobs()) j[knob.name] = p.*knob.member;
  return j;
}

// The "efficient" object `it`: a bad variant name or knob keeps the defaults and adds one line to
// `warning` (the rest of the session still loads); a field of the wrong JSON type is an error.
void readEfficient(const nlohmann::json* it, const std::string& path, EfficientField<AttentionVariantParams, bool> out, std::string& warning) {
  if (!it) return;
  if (!it->is_object()) throw Error(path + ": field 'efficient' must be an object (got " + std::string(it->type_name()) + ")");
  AttentionVariantParams p;
  std::string name = attentionVariantName(p.variant);
  readJsonField(*it, "variant", name, path);
  for (const AttentionKnob& knob : attentionKnobs()) readJsonField(*it, knob.name, p.*knob.member, path);
  readJsonField(*it, "seed", p.seed, path);
  std::string projection = linformerProjectionName(p.linformerProjection);
  readJsonField(*it, "projection", projection, path);
  readJsonField(*it, "all_layers", out.allLayers, path);
  const auto variant = attentionVariantFromName(name);
  const auto fixed = linformerProjectionFromName(projection);
  std::string problem;
  if (!variant) problem = "unknown attention variant '" + name + "'";
  else if (!fixed) problem = "unknown Linformer projection '" + projection + "' (pool, gaussian)";
  if (problem.empty()) {
    p.variant = *variant;
    p.linformerProjection = *fixed;
    problem = attentionVariantProblem(p, kVariantCheckTokens);
  }
  if (problem.empty()) {
    out.variant = p;
    return;
  }
  warning += (warning.empty() ? path + ": " : "; ") + ("efficient: " + problem + " (kept the defaults)");
}
// Every session-file field with the member it holds, one visitor per kind of state (app_state.h):
// the lists the reader, the writer and stateFieldNames walk, in file order (S is the struct or
// its const). SessionScratch is not saved (a session file's prompt is text).
template <class S, class Visit>
void forwardFields(S& s, Visit&& visit) {
  visit("prompt", s.prompt);
  visit("source", s.source);
  visit("moe_top_k", s.moeTopK);
  visit("moe_capacity_factor", s.moeCapacityFactor);
  visit("moe_expert_choice", s.moeExpertChoice);
  visit("interventions", s.interventions);
  visit("patch_source", s.patchSource);
  visit("what_ifs", s.whatIfs);
  visit("digit", s.digit);
  visit("masked_patches", s.maskedPatches);
}
template <class S, class Visit>
void readoutFields(S& s, Visit&& visit) {
  visit("temperature", s.sampling.temperature);
  visit("top_k", s.sampling.topK);
  visit("top_p", s.sampling.topP);
  visit("greedy", s.sampling.greedy);
  visit("seed", s.sampling.seed);
  visit("beam_width", s.beamWidth);
  visit("beam_steps", s.beamSteps);
  visit("measure_kv_cache", s.measureKvCache);
}
template <class S, class Visit>
void viewFields(S& s, Visit&& visit) {
  visit("panel", s.panel);
  visit("layer", s.layer);
  visit("head", s.head);
  visit("encoder_layer", s.encoderLayer);
  visit("encoder_head", s.encoderHead);
  visit("token", s.token);
  visit("average_heads", s.averageHeads);
  visit("show_scores", s.showScores);
  visit("lines_view", s.linesView);
  visit("arch_families", s.archFamilies);
  visit("show_grid", s.showGrid);
  visit("ablation_kind", s.ablationKind);
  visit("efficient", EfficientField<std::remove_reference_t<decltype((s.attentionVariant))>, std::remove_reference_t<decltype((s.variantAllLayers))>>{
                         s.attentionVariant, s.variantAllLayers});
  visit("compare_model", s.compareModel);
  visit("compare_prompt_linked", s.comparePromptLinked);
  visit("compare_prompt", s.comparePrompt);
  visit("compare_what_ifs", s.compareWhatIfs);
}
template <class S, class Visit>
void preferenceFields(S& s, Visit&& visit) {
  visit("map_memory_mib", s.mapMemoryMiB);
  visit("font_scale", s.fontScale);
  visit("projector", s.projector);
}
// S: AppState or const AppState; each part visited as its own struct.
template <class S, class Visit>
void stateFields(S& s, Visit&& visit) {
  constexpr bool isConst = std::is_const_v<S>;
  using Forward = std::conditional_t<isConst, const ForwardInputs, ForwardInputs>;
  using Readout = std::conditional_t<isConst, const ReadoutInputs, ReadoutInputs>;
  using View = std::conditional_t<isConst, const ViewSelection, ViewSelection>;
  using Prefs = std::conditional_t<isConst, const Preferences, Preferences>;
  forwardFields(static_cast<Forward&>(s), visit);
  readoutFields(static_cast<Readout&>(s), visit);
  viewFields(static_cast<View&>(s), visit);
  preferenceFields(static_cast<Prefs&>(s), visit);
}

// stateFields' reader: each field present in the object, its type checked; `names`, when set,
// collects every key asked for (stateFieldNames runs it on an empty object).
struct FieldReader {
  const nlohmann::json& j;
  const std::string& path;
  std::string& warning;
  std::vector<std::string>* names = nullptr;
  const nlohmann::json* find(const char* key) const {
    if (names) names->push_back(key);
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  }
  template <typename T>
  void operator()(const char* key, T& out) const {
    if (find(key)) readJsonField(j, key, out, path);
  }
  void operator()(const char* key, PanelId& out) const {
    std::string panel;
    (*this)(key, panel);
    if (panel.empty()) return;
    if (const auto id = panelFromName(panel)) out = *id;
    else warning += (warning.empty() ? path + ": " : "; ") + ("field '" + std::string(key) + "' names no panel (got \"" + panel + "\")");
  }
  void operator()(const char* key, std::vector<InterventionSpec>& out) const { readInterventions(find(key), path, out, warning); }
  // "no-causal-mask,skip-mlp:1" (what_if.h's names); a bad list is a warning and none are kept.
  // Absent: kept as it is (a lesson step that does not set it keeps the step before's what-ifs).
  void operator()(const char* key, WhatIfs& out) const {
    std::string text = formatWhatIfs(out);
    (*this)(key, text);
    try {
      out = parseWhatIfNames(text);
    } catch (const Error& e) {
      warning += (warning.empty() ? path + ": " : "; ") + ("field '" + std::string(key) + "': " + e.what() + " (kept none)");
    }
  }
  void operator()(const char* key, std::vector<int>& out) const {
    if (find(key)) out = readArray<int>(j, key, path);
  }
  void operator()(const char* key, AblationKind& out) const {
    if (const nlohmann::json* kind = find(key); kind && !ablationKindFromJson(*kind, out))
      throw Error(path + ": field '" + key + "' must be \"zero\", \"mean\" or \"patch\"");
  }
  void operator()(const char* key, EfficientField<AttentionVariantParams, bool> out) const { readEfficient(find(key), path, out, warning); }
};

// stateFields' writer.
struct FieldWriter {
  nlohmann::json& j;
  template <typename T>
  void operator()(const char* key, const T& value) const {
    j[key] = value;
  }
  void operator()(const char* key, PanelId panel) const { j[key] = panelName(panel); }
  void operator()(const char* key, const std::vector<InterventionSpec>& specs) const { j[key] = interventionsJson(specs); }
  void operator()(const char* key, AblationKind kind) const { j[key] = ablationKindName(kind); }
  void operator()(const char* key, const WhatIfs& whatIfs) const { j[key] = formatWhatIfs(whatIfs); }
  void operator()(const char* key, EfficientField<const AttentionVariantParams, const bool> efficient) const {
    j[key] = efficientJson(efficient.variant, efficient.allLayers);
  }
};
}  // namespace

std::string sessionFileToJsonText(const SessionFile& session) {
  nlohmann::json j = {{"tscope_session", 1}, {"model", session.modelPath}};
  stateFields(session.state, FieldWriter{j});
  return j.dump(2) + "\n";
}

void saveSessionFile(const std::string& path, const SessionFile& session) { writeFileAtomically(path, sessionFileToJsonText(session)); }

SessionFile loadSessionFile(const std::string& path) {
  requireRegularFile(path, "the session file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the session file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  return sessionFileFromJsonText(path, contents.str());
}

SessionFile sessionFileFromJsonText(const std::string& path, const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    throw Error(path + ": not a session file (malformed JSON: " + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("tscope_session")) throw Error(path + ": not a tscope session file (no \"tscope_session\" field)");
  SessionFile session;
  readJsonField(j, "model", session.modelPath, path);
  readStateFields(j, session.state, session.warning, path);
  return session;
}

namespace {
void checkPreferences(const Preferences& p, const std::string& path) {
  if (p.mapMemoryMiB < Preferences::kMinMapMemoryMiB || p.mapMemoryMiB > Preferences::kMaxMapMemoryMiB)
    throw Error(path + ": field 'map_memory_mib' is " + std::to_string(p.mapMemoryMiB) + ": map_memory_mib must be " +
                std::to_string(Preferences::kMinMapMemoryMiB) + ".." + std::to_string(Preferences::kMaxMapMemoryMiB));
  if (!(p.fontScale >= 0.5f && p.fontScale <= 4.0f))
    throw Error(path + ": field 'font_scale' is " + std::to_string(p.fontScale) + ": font_scale must be between 0.5 and 4");
}
}  // namespace

void readStateFields(const nlohmann::json& j, AppState& s, std::string& warning, const std::string& path) {
  stateFields(s, FieldReader{j, path, warning});
  if (const char* msg = validateSamplingParams(s.sampling); msg && *msg) throw Error(path + ": " + msg);
  auto range = [&](const char* key, long long value, bool fine, const std::string& rule) {
    if (!fine) throw Error(path + ": field '" + key + "' is " + std::to_string(value) + ": " + key + " must be " + rule);
  };
  range("layer", s.layer, s.layer >= 0, ">= 0");
  range("head", s.head, s.head >= 0, ">= 0");
  range("encoder_layer", s.encoderLayer, s.encoderLayer >= 0, ">= 0");
  range("encoder_head", s.encoderHead, s.encoderHead >= 0, ">= 0");
  range("token", s.token, s.token >= -1, ">= -1 (-1: the last one)");
  range("moe_top_k", s.moeTopK, s.moeTopK >= 0 && s.moeTopK <= 1024, "0..1024 (0: the model's own)");
  range("beam_width", s.beamWidth, s.beamWidth >= 0 && s.beamWidth <= 16, "0..16");
  range("beam_steps", s.beamSteps, s.beamSteps >= 1 && s.beamSteps <= 64, "1..64");
  range("digit", s.digit, s.digit >= -1 && s.digit < 100000, "-1 (none) or a test image's number");
  for (int patch : s.maskedPatches) range("masked_patches", patch, patch >= 0 && patch < (1 << 20), "a list of patch numbers >= 0");
  if (s.digit >= 0) {  // the picture is the test image's; its model is known only when the app opens it
    DigitCanvas canvas;
    if (digitTestImage(s.digit, canvas)) s.image = canvas.ink;
    else
      warning += (warning.empty() ? path + ": " : "; ") +
                 ("field 'digit': no test image " + std::to_string(s.digit) + " (the digits are not installed, or there are fewer)");
  }
  checkPreferences(s, path);
}

void readPreferenceFields(const nlohmann::json& j, Preferences& p, const std::string& path) {
  std::string warning;  // no preference field has entries to leave out
  preferenceFields(p, FieldReader{j, path, warning});
  checkPreferences(p, path);
}

void writePreferenceFields(const Preferences& p, nlohmann::json& j) { preferenceFields(p, FieldWriter{j}); }

const std::vector<std::string>& stateFieldNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    const nlohmann::json none = nlohmann::json::object();
    const std::string path;
    AppState state;
    std::string warning;
    stateFields(state, FieldReader{none, path, warning, &out});
    return out;
  }();
  return names;
}

}  // namespace tscope::session
