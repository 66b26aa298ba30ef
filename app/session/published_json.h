// The slides' published tables beside tscope's numbers as JSON, one implementation for the
// panels' facts (read by the GUI tests) and tscope-cli published: Vaswani et al.'s Table 2,
// Switch-C's slide figures against its counted shape, the named runs' training cost, and the
// Chinchilla worked example at C = 1e23 and the slide's GPT-3 specifications beside Brown et al.'s
// Table 2.1 (model/theory/slide_tables.h).
#pragma once
#include <nlohmann/json.hpp>

#include "model/theory/presets.h"
#include "model/theory/slide_tables.h"

namespace tscope {

// One object per row of Table 2; the Transformer rows add published_parameters, parameters
// (countParameters of the preset), tokens, six_nd and gpu_hours.
nlohmann::json translationTableJson();
// The slide's total, active and inference bytes beside the counted ones ({} when the preset has none).
nlohmann::json slideFiguresJson(const ModelPreset& preset);
// {pricing, runs: [{name, params, tokens, flops, gpu_hours, dollars, slide_dollars, published_gpu_hours, tokens_source}]}.
nlohmann::json trainingCostJson(const GpuPricing& pricing);
nlohmann::json chinchillaExampleJson();
// {source, columns: [{slide, paper, paper_params}], rows: [{label, cells: [{slide, slide_value,
// paper (null: not checked), checked, differs, note}]}]}: the slide's Appendix A1 against Table 2.1.
nlohmann::json gpt3SpecsJson();

}  // namespace tscope
