// Tables of the Architecture panel: parameters per component, FLOPs per token, and memory
// (weights, KV cache, attention maps) at context length n, all from model/theory/cost.h.
#pragma once
#include "model/core/config.h"

namespace tscope::gui {

void drawParameterTable(const ModelConfig& config, int contextLength);
// Horizontal bars: the share of parameters and of forward FLOPs per token of each component.
void drawCostBars(const ModelConfig& config, int contextLength, float width);
void drawFlopsTable(const ModelConfig& config, int contextLength);
void drawMemoryTable(const ModelConfig& config, int contextLength);

}  // namespace tscope::gui
