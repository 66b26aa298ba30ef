// Two architectures as one table (the Compare panel, tscope-cli compare-forward): the choices a
// lecturer contrasts (the family, the norm, the positions, MHA / GQA / MQA, a dense feed-forward or
// experts, tied embeddings) and their costs (parameters, FLOPs per token and KV-cache bytes at each
// side's prompt length), each row marked when the two sides differ.
#pragma once
#include <string>
#include <vector>

#include "model/core/config.h"

namespace tscope {

struct ArchitectureRow {
  std::string name;
  std::string left, right;
  bool differs = false;
};

// Costs at `leftTokens` / `rightTokens` tokens (float32 values, as the app runs).
std::vector<ArchitectureRow> architectureRows(const ModelConfig& left, const ModelConfig& right, int leftTokens, int rightTokens);

}  // namespace tscope
