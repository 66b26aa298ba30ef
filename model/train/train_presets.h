// Training presets as pure data: small runs (task, architecture, size) that train visibly on a
// two-core laptop in a minute or two, shared by the app's Training panel, the CLI and the tests.
// Each preset says in one sentence what a student should watch for while it trains.
#pragma once
#include <string>
#include <vector>

#include "model/train/trainer.h"

namespace tscope {

struct TrainPreset {
  std::string key;          // short name for the command line: "induction", "brown-moe", ...
  std::string name;         // "Induction heads (2-layer attention-only)"
  std::string description;  // one teaching sentence
  TrainConfig config;       // model.vocab_size and model.n_positions are filled in from the data
  DataSpec data;
};

const std::vector<TrainPreset>& trainPresets();
// The preset whose key or name is `keyOrName`, or null.
const TrainPreset* findTrainPreset(const std::string& keyOrName);

// The model config the Trainer will build for this run: vocab_size, n_positions and the tokenizer
// kind come from the data (tasks: their fixed length and vocabulary; Brown: the BPE size and the
// run's sequence length), without loading any data.
ModelConfig resolvedModelConfig(const TrainConfig& config, const DataSpec& data);

// "" when a run of this config on this data can start, else one line naming the field and the
// rule it breaks (train config, data spec, then model config, as the Trainer checks them).
std::string validateTrainSetup(const TrainConfig& config, const DataSpec& data);

}  // namespace tscope
