// Reads the WordPiece parts of a tokenizer.json (model.type "WordPiece", as BERT's): the vocab
// (token -> id, ids 0..N-1), unk_token, continuing_subword_prefix and max_input_chars_per_word, a
// BertNormalizer (its four flags; strip_accents null follows lowercase) or none, a BertPreTokenizer
// or none, a WordPiece decoder (prefix, cleanup) or none, and the added tokens. The post_processor
// is not read: encode() never adds [CLS] and [SEP]. Anything else is refused in one line.
#include <unordered_map>

#include "model/tokenize/tokenizer_json_fields.h"

namespace tscope::tokenizer_json {
namespace {

using nlohmann::json;

class WordPieceReader : Fields {
 public:
  explicit WordPieceReader(const std::string& name) : Fields(name) { spec_.name = name; }

  WordPieceSpec read(const json& root) {
    const json& model = field(root, "model", "");
    spec_.addedTokens = addedTokens(root);
    readVocab(model);
    readModelOptions(model);
    readNormalizer(root.contains("normalizer") ? root["normalizer"] : json());
    readPreTokenizer(root.contains("pre_tokenizer") ? root["pre_tokenizer"] : json());
    readDecoder(root.contains("decoder") ? root["decoder"] : json());
    return std::move(spec_);
  }

 private:
  void readVocab(const json& model) {
    const json& vocab = field(model, "vocab", "model");
    if (!vocab.is_object()) fail("model.vocab is not an object of \"token\": id");
    if (vocab.size() > size_t(kMaxVocab)) fail("model.vocab has more than 4M tokens");
    if (vocab.empty()) fail("empty vocab");
    std::vector<bool> filled(vocab.size(), false);
    spec_.pieceOfId.resize(vocab.size());
    for (const auto& item : vocab.items()) {
      const std::string& piece = item.key();
      const int tokenId = id(item.value(), "id of token \"" + piece.substr(0, 40) + "\"");
      if (static_cast<size_t>(tokenId) >= vocab.size())
        fail("id " + std::to_string(tokenId) + " of token \"" + piece.substr(0, 40) + "\" is outside 0.." + std::to_string(vocab.size() - 1) +
             " (the vocab has " + std::to_string(vocab.size()) + " tokens)");
      if (filled[tokenId]) fail("duplicate id " + std::to_string(tokenId) + " in the vocab");
      if (piece.empty() || piece.size() > kMaxTokenBytes)
        fail("token of " + std::to_string(piece.size()) + " bytes (id " + std::to_string(tokenId) + ")");
      filled[tokenId] = true;
      spec_.pieceOfId[tokenId] = piece;
      idOfPiece_.emplace(piece, tokenId);
    }
  }

  void readModelOptions(const json& model) {
    const std::string unk = model.contains("unk_token") ? string(model, "unk_token", "model") : "[UNK]";
    auto it = idOfPiece_.find(unk);
    if (it == idOfPiece_.end()) fail("model.unk_token \"" + unk.substr(0, 40) + "\" is not in the vocab");
    spec_.unkId = it->second;
    if (model.contains("continuing_subword_prefix") && !model["continuing_subword_prefix"].is_null())
      spec_.continuingSubwordPrefix = string(model, "continuing_subword_prefix", "model");
    if (model.contains("max_input_chars_per_word") && !model["max_input_chars_per_word"].is_null()) {
      const json& value = model["max_input_chars_per_word"];
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > INT32_MAX)
        fail("model.max_input_chars_per_word is not an integer in 0..2147483647: " + value.dump().substr(0, 40));
      spec_.maxInputCharsPerWord = static_cast<int>(value.get<int64_t>());
    }
  }

  void readNormalizer(const json& node) {
    if (node.is_null()) return;
    const std::string type = node.is_object() ? string(node, "type", "normalizer") : "";
    if (type != "BertNormalizer") fail("normalizer \"" + type + "\" is not supported with WordPiece (only BertNormalizer)");
    wordpiece::BertNormalizerOptions options;
    options.cleanText = flag(node, "clean_text", true);
    options.handleChineseChars = flag(node, "handle_chinese_chars", true);
    if (node.contains("strip_accents") && !node["strip_accents"].is_null()) options.stripAccents = flag(node, "strip_accents", true);
    options.lowercase = flag(node, "lowercase", true);
    spec_.normalizer = options;
  }

  void readPreTokenizer(const json& node) {
    spec_.bertPreTokenizer = !node.is_null();
    if (node.is_null()) return;
    const std::string type = node.is_object() ? string(node, "type", "pre_tokenizer") : "";
    if (type != "BertPreTokenizer") fail("pre_tokenizer \"" + type + "\" is not supported with WordPiece (only BertPreTokenizer)");
  }

  void readDecoder(const json& node) {
    spec_.wordPieceDecoder = !node.is_null();
    if (node.is_null()) return;
    const std::string type = node.is_object() ? string(node, "type", "decoder") : "";
    if (type != "WordPiece") fail("decoder \"" + type + "\" is not supported with WordPiece (only the WordPiece decoder)");
    if (node.contains("prefix") && !node["prefix"].is_null()) spec_.decodePrefix = string(node, "prefix", "decoder");
    spec_.decodeCleanup = flag(node, "cleanup", true);
  }

  WordPieceSpec spec_;
  std::unordered_map<std::string, int> idOfPiece_;
};

}  // namespace

WordPieceSpec wordPieceSpecFromJson(const std::string& name, const nlohmann::json& root) { return WordPieceReader(name).read(root); }

}  // namespace tscope::tokenizer_json
