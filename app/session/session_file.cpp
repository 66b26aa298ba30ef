// Session file (de)serialisation with strict type checks on every field.
#include "app/session/session_file.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "model/core/file_check.h"
#include "model/core/error.h"
#include "model/core/json_field.h"
#include "model/io/npy.h"

namespace tscope::gui {

namespace {
// Reads the state's fields from one JSON object, and names every key it is asked for, so the list
// of fields is this file's reads and nothing else (stateFieldNames runs it on an empty object).
struct FieldReader {
  const nlohmann::json& j;
  const std::string& path;
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
};
constexpr int kMaxLayersOrHeads = 4096;
constexpr int kVariantCheckTokens = 32768;  // a session's knobs are checked for the longest sequence the lab measures

// "zero" / "mean" / "patch" -> the kind; false for anything else (a JSON string or not).
bool ablationKindFromJson(const nlohmann::json& name, AblationKind& out) {
  return name.is_string() && ablationKindFromName(name.get<std::string>(), out);
}

nlohmann::json interventionsJson(const std::vector<InterventionSpec>& specs) {
  nlohmann::json out = nlohmann::json::array();
  for (const InterventionSpec& spec : specs) {
    nlohmann::json entry = {{"layer", spec.layer}, {"head", spec.isMlp() ? nlohmann::json("mlp") : nlohmann::json(spec.head)}, {"kind", ablationKindName(spec.kind)}};
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

// The valid, distinct entries of the "interventions" array; the bad ones are named in `warning`.
void readInterventions(const FieldReader& field, AppState& s, std::string& warning) {
  const nlohmann::json* it = field.find("interventions");
  const std::string& path = field.path;
  if (!it) return;
  if (!it->is_array()) throw Error(path + ": field 'interventions' must be an array (got " + std::string(it->type_name()) + ")");
  std::string skipped;
  for (size_t i = 0; i < it->size(); ++i) {
    InterventionSpec spec;
    const std::string problem = interventionFromJson((*it)[i], spec);
    if (!problem.empty()) {
      if (skipped.empty()) skipped = "interventions[" + std::to_string(i) + "]: " + problem;
      else skipped += ", [" + std::to_string(i) + "]";
      continue;
    }
    if (std::find(s.interventions.begin(), s.interventions.end(), spec) == s.interventions.end()) s.interventions.push_back(spec);
  }
  if (!skipped.empty()) warning = path + ": field 'interventions' has entries left out: " + skipped;
}

// The Efficient-attention panel's variant and knobs.
nlohmann::json efficientJson(const AppState& s) {
  const AttentionVariantParams& p = s.attentionVariant;
  nlohmann::json j = {{"variant", attentionVariantName(p.variant)},
                      {"projection", linformerProjectionName(p.linformerProjection)},
                      {"seed", p.seed},
                      {"all_layers", s.variantAllLayers}};
  for (const AttentionKnob& knob : attentionKnobs()) j[knob.name] = p.*knob.member;
  return j;
}

// The "efficient" object: a bad variant name or knob keeps the defaults and adds one line to
// `warning` (the rest of the session still loads); a field of the wrong JSON type is an error.
void readEfficient(const FieldReader& field, AppState& s, std::string& warning) {
  const nlohmann::json* it = field.find("efficient");
  const std::string& path = field.path;
  if (!it) return;
  if (!it->is_object()) throw Error(path + ": field 'efficient' must be an object (got " + std::string(it->type_name()) + ")");
  AttentionVariantParams p;
  std::string name = attentionVariantName(p.variant);
  readJsonField(*it, "variant", name, path);
  for (const AttentionKnob& knob : attentionKnobs()) readJsonField(*it, knob.name, p.*knob.member, path);
  readJsonField(*it, "seed", p.seed, path);
  std::string projection = linformerProjectionName(p.linformerProjection);
  readJsonField(*it, "projection", projection, path);
  readJsonField(*it, "all_layers", s.variantAllLayers, path);
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
    s.attentionVariant = p;
    return;
  }
  warning += (warning.empty() ? path + ": " : "; ") + ("efficient: " + problem + " (kept the defaults)");
}
}  // namespace

std::string sessionFileToJsonText(const SessionFile& session) {
  const AppState& s = session.state;
  const nlohmann::json j = {{"tscope_session", 1},
                            {"model", session.modelPath},
                            {"prompt", s.prompt},
                            {"source", s.source},
                            {"panel", panelName(s.panel)},
                            {"layer", s.layer},
                            {"head", s.head},
                            {"encoder_layer", s.encoderLayer},
                            {"encoder_head", s.encoderHead},
                            {"token", s.token},
                            {"average_heads", s.averageHeads},
                            {"show_scores", s.showScores},
                            {"lines_view", s.linesView},
                            {"show_grid", s.showGrid},
                            {"temperature", s.sampling.temperature},
                            {"top_k", s.sampling.topK},
                            {"top_p", s.sampling.topP},
                            {"greedy", s.sampling.greedy},
                            {"seed", s.sampling.seed},
                            {"beam_width", s.beamWidth},
                            {"beam_steps", s.beamSteps},
                            {"measure_kv_cache", s.measureKvCache},
                            {"moe_top_k", s.moeTopK},
                            {"moe_capacity_factor", s.moeCapacityFactor},
                            {"moe_expert_choice", s.moeExpertChoice},
                            {"interventions", interventionsJson(s.interventions)},
                            {"patch_source", s.patchSource},
                            {"ablation_kind", ablationKindName(s.ablationKind)},
                            {"efficient", efficientJson(s)},
                            {"map_memory_mib", s.mapMemoryMiB},
                            {"font_scale", s.fontScale},
                            {"projector", s.projector}};
  return j.dump(2) + "\n";
}

void saveSessionFile(const std::string& path, const SessionFile& session) {
  writeFileAtomically(path, sessionFileToJsonText(session));
}

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
void readFields(const FieldReader& read, AppState& s, std::string& warning) {
  const std::string& path = read.path;
  read("prompt", s.prompt);
  read("source", s.source);
  std::string panel;
  read("panel", panel);
  if (!panel.empty()) {
    if (const auto id = panelFromName(panel)) s.panel = *id;
    else warning += (warning.empty() ? path + ": " : "; ") + ("field 'panel' names no panel (got \"" + panel + "\")");
  }
  read("layer", s.layer);
  read("head", s.head);
  read("encoder_layer", s.encoderLayer);
  read("encoder_head", s.encoderHead);
  read("token", s.token);
  read("average_heads", s.averageHeads);
  read("show_scores", s.showScores);
  read("lines_view", s.linesView);
  read("show_grid", s.showGrid);
  read("temperature", s.sampling.temperature);
  read("top_k", s.sampling.topK);
  read("top_p", s.sampling.topP);
  read("greedy", s.sampling.greedy);
  read("seed", s.sampling.seed);
  read("beam_width", s.beamWidth);
  read("beam_steps", s.beamSteps);
  read("measure_kv_cache", s.measureKvCache);
  read("moe_top_k", s.moeTopK);
  read("moe_capacity_factor", s.moeCapacityFactor);
  read("moe_expert_choice", s.moeExpertChoice);
  readInterventions(read, s, warning);
  read("patch_source", s.patchSource);
  if (const nlohmann::json* kind = read.find("ablation_kind"); kind && !ablationKindFromJson(*kind, s.ablationKind))
    throw Error(path + ": field 'ablation_kind' must be \"zero\", \"mean\" or \"patch\"");
  readEfficient(read, s, warning);
  read("map_memory_mib", s.mapMemoryMiB);
  read("font_scale", s.fontScale);
  read("projector", s.projector);
}
}  // namespace

void readStateFields(const nlohmann::json& j, AppState& s, std::string& warning, const std::string& path) {
  readFields(FieldReader{j, path}, s, warning);
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
  range("map_memory_mib", s.mapMemoryMiB, s.mapMemoryMiB >= AppState::kMinMapMemoryMiB && s.mapMemoryMiB <= AppState::kMaxMapMemoryMiB,
        std::to_string(AppState::kMinMapMemoryMiB) + ".." + std::to_string(AppState::kMaxMapMemoryMiB));
  if (!(s.fontScale >= 0.5f && s.fontScale <= 4.0f))
    throw Error(path + ": field 'font_scale' is " + std::to_string(s.fontScale) + ": font_scale must be between 0.5 and 4");
}

const std::vector<std::string>& stateFieldNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    const nlohmann::json none = nlohmann::json::object();
    const std::string path;
    AppState state;
    std::string warning;
    readFields(FieldReader{none, path, &out}, state, warning);
    return out;
  }();
  return names;
}

}  // namespace tscope::gui
