// The slides' published tables as JSON (published_json.h).
#include "app/session/published_json.h"

#include <cmath>

#include "model/theory/cost.h"

namespace tscope {

namespace {
nlohmann::json number(double value) { return std::isnan(value) ? nlohmann::json(nullptr) : nlohmann::json(value); }
nlohmann::json optional(double value) { return value > 0 ? nlohmann::json(value) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json translationTableJson() {
  nlohmann::json rows = nlohmann::json::array();
  for (const TranslationRow& r : vaswaniTable2()) {
    nlohmann::json row = {{"model", r.model},
                          {"bleu_en_de", number(r.bleuEnDe)},
                          {"bleu_en_fr", number(r.bleuEnFr)},
                          {"flops_en_de", number(r.flopsEnDe)},
                          {"flops_en_fr", number(r.flopsEnFr)}};
    if (r.preset >= 0) {
      const ModelPreset& p = transformer2017Presets()[r.preset];
      const ParamCounts counts = countParameters(presetConfig(p));
      row["published_parameters"] = p.publishedParameters;
      row["parameters"] = counts.total;
      row["tokens"] = vaswaniTrainingTokens(r);
      row["six_nd"] = 6.0 * static_cast<double>(counts.nonEmbedding) * vaswaniTrainingTokens(r);
      row["gpu_hours"] = r.gpuHours;
    }
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json slideFiguresJson(const ModelPreset& preset) {
  if (preset.slideTotal <= 0 && preset.slideActive <= 0 && preset.slideInferenceBytes <= 0) return nlohmann::json::object();
  const ModelConfig c = presetConfig(preset);
  const ParamCounts counts = countParameters(c);
  return {{"name", preset.name},
          {"slide_total", optional(preset.slideTotal)},
          {"slide_active", optional(preset.slideActive)},
          {"slide_inference_bytes", optional(preset.slideInferenceBytes)},
          {"published_total", preset.publishedParameters},
          {"total", counts.total},
          {"active", counts.active},
          {"weights_16bit_bytes", weightBytes(c, 2)},
          {"active_16bit_bytes", 2 * counts.active}};
}

nlohmann::json trainingCostJson(const GpuPricing& pricing) {
  nlohmann::json runs = nlohmann::json::array();
  for (const CostedRun& r : costedRuns()) {
    const TrainingCost cost = trainingCost(r.run.params, r.run.tokens, pricing);
    runs.push_back({{"name", r.run.name},
                    {"params", r.run.params},
                    {"tokens", r.run.tokens},
                    {"flops", cost.flops},
                    {"gpu_hours", cost.gpuHours},
                    {"dollars", cost.dollars},
                    {"slide_dollars", optional(r.slideDollars)},
                    {"published_gpu_hours", optional(r.publishedGpuHours)},
                    {"tokens_source", r.tokensSource}});
  }
  return {{"pricing", {{"dollars_per_gpu_hour", pricing.dollarsPerGpuHour}, {"sustained_flops_per_gpu", pricing.sustainedFlopsPerGpu}}},
          {"runs", runs}};
}

nlohmann::json chinchillaExampleJson() {
  const SlideChinchillaExample e = slideChinchillaExample();
  const auto optimum = [](const ComputeOptimum& o) {
    return nlohmann::json{{"params", o.params}, {"tokens", o.tokens}, {"tokens_per_param", o.tokensPerParam}, {"loss", o.loss}};
  };
  return {{"flops", e.flops},
          {"slide", {{"power", e.slidePower}, {"params", e.slideParams}, {"tokens", e.slideTokens}, {"budget_spent", e.slideBudget}}},
          {"formula", {{"power", e.power}, {"params", e.paramsFromFormula}, {"tokens", e.tokensFromFormula}}},
          {"hoffmann", optimum(e.hoffmann)},
          {"besiroglu", optimum(e.besiroglu)},
          {"where_it_goes_wrong", e.whereItGoesWrong}};
}

nlohmann::json gpt3SpecsJson() {
  nlohmann::json columns = nlohmann::json::array(), rows = nlohmann::json::array();
  for (const Gpt3SpecColumn& c : gpt3SlideColumns()) {
    const Gpt3PaperModel& m = gpt3Table21()[c.paperModel];
    columns.push_back({{"slide", c.slide}, {"paper", m.name}, {"paper_params", m.params}});
  }
  for (const Gpt3SpecRow& r : gpt3SlideSpecs()) {
    nlohmann::json cells = nlohmann::json::array();
    for (const Gpt3SpecCell& c : r.cells)
      cells.push_back({{"slide", c.slide},
                       {"slide_value", c.slideValue},
                       {"paper", number(c.paper)},
                       {"checked", c.checked},
                       {"differs", c.differs},
                       {"note", c.note}});
    rows.push_back({{"label", r.label}, {"cells", cells}});
  }
  return {{"source", "slide: Appendix A1: GPT-3 Complete Specifications; paper: Brown et al. 2020 (arXiv 2005.14165), Table 2.1"},
          {"columns", columns},
          {"rows", rows}};
}

}  // namespace tscope
