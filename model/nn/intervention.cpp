// Interventions (see intervention.h): the L.H / L.mlp spec syntax, the replacement of a head's or
// a feed-forward output's rows (no model needed: session files parse specs without one).
#include "model/nn/intervention.h"

#include <algorithm>
#include <charconv>

#include "model/core/error.h"
#include "model/core/list_text.h"

namespace tscope {

const char* ablationKindName(AblationKind kind) {
  switch (kind) {
    case AblationKind::Zero: return "zero";
    case AblationKind::Mean: return "mean";
    case AblationKind::Patch: return "patch";
  }
  return "zero";
}

bool ablationKindFromName(std::string_view name, AblationKind& out) {
  for (AblationKind kind : {AblationKind::Zero, AblationKind::Mean, AblationKind::Patch})
    if (name == ablationKindName(kind)) {
      out = kind;
      return true;
    }
  return false;
}

bool usesKind(const std::vector<InterventionSpec>& specs, AblationKind kind) {
  return std::any_of(specs.begin(), specs.end(), [kind](const InterventionSpec& s) { return s.kind == kind; });
}

std::string interventionProblem(const InterventionSpec& spec, const ModelConfig& config) {
  const std::string name = formatInterventions({spec});
  if (spec.layer < 0 || spec.layer >= config.n_layer)
    return name + ": layer " + std::to_string(spec.layer) + " is outside the model's " + std::to_string(config.n_layer) + " layers";
  if (spec.isMlp() && !config.hasFeedForward()) return name + ": this model is attention-only: its layers have no MLP";
  if (spec.cross && spec.isMlp()) return name + ": a cross-attention intervention names a head";
  if (spec.cross && !config.isEncoderDecoder()) return name + ": this model has no cross-attention (it is not an encoder-decoder)";
  if (!spec.isMlp() && spec.head >= config.n_head)
    return name + ": head " + std::to_string(spec.head) + " is outside the layer's " + std::to_string(config.n_head) + " heads";
  return "";
}

namespace {

bool parseInt(std::string_view text, int& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

}  // namespace

std::vector<InterventionSpec> parseInterventions(std::string_view text, AblationKind kind, const ModelConfig& config) {
  std::vector<InterventionSpec> specs;
  for (const std::string_view item : splitList(text)) {
    const size_t dot = item.find('.');
    InterventionSpec spec;
    spec.kind = kind;
    const std::string_view what = dot == std::string_view::npos ? std::string_view() : item.substr(dot + 1);
    const bool layerOk = dot != std::string_view::npos && parseInt(item.substr(0, dot), spec.layer);
    spec.cross = !what.empty() && what.front() == 'x';
    const bool whatOk = what == "mlp" ? (spec.head = -1, true) : parseInt(spec.cross ? what.substr(1) : what, spec.head);
    if (!layerOk || !whatOk)
      throw Error("intervention '" + std::string(item) +
                  "': expected LAYER.HEAD, LAYER.mlp or LAYER.xHEAD (a cross-attention head), e.g. 1.0,1.3,0.mlp");
    if (std::string problem = interventionProblem(spec, config); !problem.empty()) throw Error("intervention " + problem);
    if (std::find(specs.begin(), specs.end(), spec) == specs.end()) specs.push_back(spec);
  }
  return specs;
}

std::string formatInterventions(const std::vector<InterventionSpec>& specs) {
  std::string out;
  for (const InterventionSpec& s : specs) {
    if (!out.empty()) out += ',';
    out += std::to_string(s.layer) + "." + (s.isMlp() ? std::string("mlp") : (s.cross ? "x" : "") + std::to_string(s.head));
  }
  return out;
}

bool Interventions::touchesHeads(int layer, bool cross) const {
  return std::any_of(edits.begin(), edits.end(), [&](const Edit& e) { return e.spec.layer == layer && !e.spec.isMlp() && e.spec.cross == cross; });
}

bool Interventions::touchesMlp(int layer) const {
  return std::any_of(edits.begin(), edits.end(), [layer](const Edit& e) { return e.spec.layer == layer && e.spec.isMlp(); });
}

namespace {

// Rows (T, C): columns [column, column + width) of row t take the edit's value for position pos0 + t.
void replaceColumns(const Interventions::Edit& e, float* rows, int T, int pos0, int C, int column) {
  for (int t = 0; t < T; ++t) {
    float* at = rows + (size_t)t * C + column;
    const int position = pos0 + t;
    switch (e.spec.kind) {
      case AblationKind::Zero: std::fill_n(at, e.width, 0.0f); break;
      case AblationKind::Mean: std::copy_n(e.values.data(), e.width, at); break;
      case AblationKind::Patch:
        if (position < e.positions) std::copy_n(e.values.data() + (size_t)position * e.width, e.width, at);
        break;
    }
  }
}

}  // namespace

void Interventions::applyToHeads(int layer, bool cross, float* rows, int T, int pos0, int A, int D) const {
  for (const Edit& e : edits)
    if (e.spec.layer == layer && !e.spec.isMlp() && e.spec.cross == cross) replaceColumns(e, rows, T, pos0, A, e.spec.head * D);
}

void Interventions::applyToMlp(int layer, float* rows, int T, int pos0, int C) const {
  for (const Edit& e : edits)
    if (e.spec.layer == layer && e.spec.isMlp()) replaceColumns(e, rows, T, pos0, C, 0);
}

}  // namespace tscope
