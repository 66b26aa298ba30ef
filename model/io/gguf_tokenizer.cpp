// A GGUF file's own tokenizer (gguf_tokenizer.h) built from its tokenizer.ggml.* metadata as the
// tokenizer.json readers build theirs: byte-level BPE through HfTokenizerSpec (tokenizer_hf.h),
// SentencePiece's score-based BPE through makeScoreBpeTokenizer (tokenizer_spm.h). Pre-tokenizer
// names: llama.cpp's llama-vocab.cpp (LLAMA_VOCAB_PRE_TYPE_*), each mapped to the split tokenizer.json
// spells for the same models.
#include "model/io/gguf_tokenizer.h"

#include <unordered_map>

#include "model/core/error.h"
#include "model/io/gguf.h"
#include "model/tokenize/tokenizer_hf.h"
#include "model/tokenize/tokenizer_spm.h"

namespace tscope {

namespace {

// llama.cpp's token types (llama_token_type): 3 control, 4 user-defined.
constexpr int64_t kControl = 3, kUserDefined = 4;

struct PreTokenizer {
  std::string_view name;
  SplitPattern split;
  bool ignoreMerges;  // a word that is a whole token is taken as is (Llama 3's tokenizer.json)
};
constexpr PreTokenizer kPreTokenizers[] = {
    {"gpt-2", SplitPattern::Gpt2, false},      {"default", SplitPattern::Gpt2, false},    {"llama3", SplitPattern::Llama3, true},
    {"llama-bpe", SplitPattern::Llama3, true}, {"smaug-bpe", SplitPattern::Llama3, true}, {"qwen2", SplitPattern::Qwen2, false},
};

std::unique_ptr<Tokenizer> byteLevelBpe(const GgufFile& file, std::vector<std::string> tokens, const std::vector<int64_t>& types) {
  HfTokenizerSpec spec;
  spec.name = file.name();
  const std::string pre = file.tryString("tokenizer.ggml.pre").value_or("default");
  const PreTokenizer* found = nullptr;
  for (const PreTokenizer& p : kPreTokenizers)
    if (p.name == pre) found = &p;
  if (!found)
    throw Error(file.name() + ": tokenizer.ggml.pre '" + oneLine(pre, 40) +
                "' is not a pre-tokenizer tscope reads yet (gpt-2, llama3, llama-bpe, qwen2)");
  spec.byteLevel = true;
  spec.split = found->split;
  spec.ignoreMerges = found->ignoreMerges;
  std::unordered_map<std::string, int> idOf;
  for (size_t i = 0; i < tokens.size(); ++i) idOf.emplace(tokens[i], static_cast<int>(i));
  const std::vector<std::string> merges = file.stringArray("tokenizer.ggml.merges");
  for (size_t i = 0; i < merges.size(); ++i) {
    const size_t space = merges[i].find(' ');
    const std::string left = merges[i].substr(0, space), right = space == std::string::npos ? "" : merges[i].substr(space + 1);
    const auto l = idOf.find(left), r = idOf.find(right), result = idOf.find(left + right);
    if (space == std::string::npos || l == idOf.end() || r == idOf.end() || result == idOf.end())
      throw Error(file.name() + ": tokenizer.ggml.merges[" + std::to_string(i) + "] '" + oneLine(merges[i], 60) +
                  "' is not two pieces of the vocabulary");
    spec.merges.add(l->second, r->second, result->second, static_cast<int>(i));
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!types.empty() && (types[i] == kControl || types[i] == kUserDefined) && !tokens[i].empty())
      spec.addedTokens.push_back({tokens[i], static_cast<int>(i), types[i] == kControl, false, false, false});
  if (file.tryBool("tokenizer.ggml.add_bos_token").value_or(false))
    if (const auto bos = file.tryUint("tokenizer.ggml.bos_token_id")) spec.bosId = static_cast<int>(*bos);
  spec.pieceOfId = std::move(tokens);
  return makeHfBpeTokenizer(std::move(spec));
}

std::unique_ptr<Tokenizer> scoreBpe(const GgufFile& file, std::vector<std::string> tokens, const std::vector<int64_t>& types) {
  ScoreBpeOptions options;
  options.name = file.name();
  options.source = "GGUF tokenizer.ggml (llama)";
  options.addDummyPrefix = file.tryBool("tokenizer.ggml.add_space_prefix").value_or(true);
  const auto id = [&](const char* key) { return static_cast<int>(file.tryUint(key).value_or(static_cast<uint64_t>(-1))); };
  options.bosId = id("tokenizer.ggml.bos_token_id");
  options.eosId = id("tokenizer.ggml.eos_token_id");
  options.unkId = id("tokenizer.ggml.unknown_token_id");
  const std::vector<double> scores64 = file.has("tokenizer.ggml.scores") ? file.floatArray("tokenizer.ggml.scores") : std::vector<double>{};
  if (scores64.size() != tokens.size())
    throw Error(file.name() + ": tokenizer.ggml.scores has " + std::to_string(scores64.size()) + " entries for " + std::to_string(tokens.size()) +
                " tokens");
  const std::vector<float> scores(scores64.begin(), scores64.end());
  const std::vector<int> typeInts(types.begin(), types.end());
  return makeScoreBpeTokenizer(std::move(tokens), scores, typeInts, options);
}

}  // namespace

std::unique_ptr<Tokenizer> ggufTokenizer(const GgufFile& file) {
  const auto model = file.tryString("tokenizer.ggml.model");
  if (!model) throw Error(file.name() + ": no tokenizer in the file (tokenizer.ggml.model is missing); token ids work");
  std::vector<std::string> tokens = file.stringArray("tokenizer.ggml.tokens");
  std::vector<int64_t> types;
  if (file.has("tokenizer.ggml.token_type")) types = file.intArray("tokenizer.ggml.token_type");
  if (!types.empty() && types.size() != tokens.size())
    throw Error(file.name() + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " + std::to_string(tokens.size()) +
                " tokens");
  if (*model == "gpt2") return byteLevelBpe(file, std::move(tokens), types);
  if (*model == "llama") return scoreBpe(file, std::move(tokens), types);
  throw Error(file.name() + ": tokenizer.ggml.model '" + oneLine(*model, 40) + "' is not read yet (tscope reads gpt2 and llama)");
}

}  // namespace tscope
