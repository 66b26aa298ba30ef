// Fuzzes a HuggingFace config.json of the Llama family, BERT or ViT (model/io/hf_checkpoint.h,
// hf_vit.h): the JSON parse, the architecture check and hfLlamaConfig / hfBertConfig / hfVitConfig
// (with ViT's class names). Every refusal must be a tscope::Error
// of one line, and an accepted config must validate (its sizes then decide the weight arena).
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "model/core/config.h"
#include "model/core/error.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/hf_vit.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json json;
  if (!fuzz::parseJson(data, size, json)) return 0;
  const std::string unsupported = unsupportedHfArchitecture(json);
  FUZZ_CHECK(unsupported.find('\n') == std::string::npos, unsupported);
  if (!unsupported.empty()) return 0;
  if (isHfVit(json)) {  // an image classifier: its config and its labels, one line each when refused
    try {
      const ModelConfig vit = hfVitConfig(json, "config.json");
      FUZZ_CHECK(validateConfig(vit).empty(), validateConfig(vit));
      FUZZ_CHECK(vit.isImage() && !vit.causal, "ViT's architecture");
      FUZZ_CHECK(static_cast<int>(hfVitLabels(json, "config.json").size()) == vit.vocab_size, "one label per class");
    } catch (const Error& e) {
      FUZZ_CHECK(std::string(e.what()).find('\n') == std::string::npos, e.what());
    }
    return 0;
  }
  const bool bert = isHfBert(json);
  if (!bert && !isHfLlamaFamily(json)) return 0;
  ModelConfig config;
  try {
    config = bert ? hfBertConfig(json) : hfLlamaConfig(json);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).find('\n') == std::string::npos, e.what());
    return 0;
  }
  FUZZ_CHECK(validateConfig(config).empty(), validateConfig(config));
  if (bert) {  // an encoder-only masked LM, post-norm, with BERT's embedding norm and MLM head
    FUZZ_CHECK(config.masked_lm && !config.causal && !config.pre_norm && config.embedding_norm && config.mlm_head, "BERT's architecture");
    return 0;
  }
  FUZZ_CHECK(config.n_positions >= 1 && config.n_positions <= kHfContextCap, "n_positions outside [1, kHfContextCap]");
  FUZZ_CHECK((config.head_dim > 0 || config.n_embd % config.n_head == 0) && config.headDim() % 2 == 0, "head dimension");
  return 0;
}
