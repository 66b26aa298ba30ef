// The slides' published figures in the Architecture panel, beside tscope's counts: Vaswani et
// al.'s Table 2 (BLEU and training cost) with the Transformer base / big parameters from
// countParameters, and a preset's slide figures (Switch-C's "1.6T, only 10B active, 20 GB").
// The numbers come from app/session/published_json.h, the same JSON tscope-cli published prints.
#pragma once
#include <nlohmann/json.hpp>

#include "model/theory/presets.h"

namespace tscope::gui {

// The table; its rows go to facts["table2"].
void drawTranslationTable(nlohmann::json& facts);
// The slide's GPT-3 specifications (Appendix A1) beside Brown et al.'s Table 2.1, differences
// marked; the JSON goes to facts["gpt3_specs"].
void drawGpt3Specs(nlohmann::json& facts);
// One line comparing the preset's slide figures with tscope's counts (nothing when it has none);
// the numbers go to facts["slide"].
void drawSlideFigures(const ModelPreset& preset, nlohmann::json& facts);

}  // namespace tscope::gui
