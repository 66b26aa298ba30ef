// Reads a HuggingFace tokenizer.json, checking every field it uses and naming the first problem in
// one line. model.type "WordPiece" goes to tokenizer_wordpiece_json.cpp; "BPE" (or no type) is read
// here into an HfTokenizerSpec. Supported: model BPE (merges as "a b" or ["a", "b"]),
// normalizers Prepend / Replace (string) / NFC / Sequence, pre-tokenizers ByteLevel, Split with a
// known regex (pretokenize.h), Metaspace, decoders ByteLevel / Replace / ByteFallback / Fuse / Strip
// / Metaspace, and the BOS of a TemplateProcessing post_processor.
#include "model/tokenize/tokenizer_json.h"

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "model/core/error.h"
#include "model/tokenize/bpe_core.h"
#include "model/tokenize/tokenizer_hf.h"
#include "model/tokenize/tokenizer_json_fields.h"

namespace tscope {
namespace {

using nlohmann::json;

constexpr size_t kMaxFileBytes = size_t(1) << 30;  // 1 GiB
constexpr size_t kMaxMerges = size_t(1) << 24;
constexpr int kMaxNesting = 8;  // Sequence inside Sequence
using tokenizer_json::kMaxTokenBytes;
using tokenizer_json::kMaxVocab;

class Reader : tokenizer_json::Fields {
 public:
  explicit Reader(const std::string& name) : Fields(name) { spec_.name = name; }

  HfTokenizerSpec read(const json& root) {
    const json& model = field(root, "model", "");
    spec_.addedTokens = addedTokens(root);
    readVocab(model);
    readModelOptions(model);
    readMerges(field(model, "merges", "model"));
    if (root.contains("normalizer")) readNormalizer(root["normalizer"], 0);
    if (root.contains("pre_tokenizer")) readPreTokenizer(root["pre_tokenizer"], 0);
    if (root.contains("decoder")) readDecoder(root["decoder"], 0);
    if (root.contains("post_processor")) readPostProcessor(root["post_processor"]);
    return std::move(spec_);
  }

 private:
  void setPiece(int tokenId, const std::string& piece, bool fromVocab) {
    if (piece.empty() || piece.size() > kMaxTokenBytes)
      fail("token of " + std::to_string(piece.size()) + " bytes (id " + std::to_string(tokenId) + ")");
    if (static_cast<size_t>(tokenId) >= spec_.pieceOfId.size()) {
      spec_.pieceOfId.resize(tokenId + 1);
      filled_.resize(tokenId + 1, false);
    }
    if (filled_[tokenId] && fromVocab) fail("duplicate id " + std::to_string(tokenId) + " in the vocab");
    if (!filled_[tokenId]) spec_.pieceOfId[tokenId] = piece;  // an added token's id in the vocab keeps the vocab's string
    filled_[tokenId] = true;
  }

  void readVocab(const json& model) {
    const json& vocab = field(model, "vocab", "model");
    if (!vocab.is_object()) fail("model.vocab is not an object of \"token\": id");
    if (vocab.size() > size_t(kMaxVocab)) fail("model.vocab has more than 4M tokens");
    for (const auto& [piece, value] : vocab.items()) {
      const int tokenId = id(value, "id of token \"" + piece.substr(0, 40) + "\"");
      setPiece(tokenId, piece, true);
      idOfPiece_.emplace(piece, tokenId);
    }
    for (const HfAddedToken& token : spec_.addedTokens) setPiece(token.id, token.content, false);
    for (size_t i = 0; i < filled_.size(); ++i)
      if (!filled_[i]) fail("no token has id " + std::to_string(i) + " (ids must be 0..N-1)");
    if (spec_.pieceOfId.empty()) fail("empty vocab");
  }

  void readModelOptions(const json& model) {
    if (model.contains("dropout") && !model["dropout"].is_null() && !(model["dropout"].is_number() && model["dropout"].get<double>() == 0.0))
      fail("model.dropout is not supported");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (model.contains(key) && !model[key].is_null() && model[key] != "") fail(std::string("model.") + key + " is not supported");
    if (model.contains("unk_token") && !model["unk_token"].is_null()) {
      const std::string unk = string(model, "unk_token", "model");
      auto it = idOfPiece_.find(unk);
      if (it == idOfPiece_.end()) fail("model.unk_token \"" + unk + "\" is not in the vocab");
      spec_.unkId = it->second;
    }
    spec_.fuseUnk = flag(model, "fuse_unk", false);
    spec_.byteFallback = flag(model, "byte_fallback", false);
    spec_.ignoreMerges = flag(model, "ignore_merges", false);
  }

  int pieceId(const std::string& piece, size_t mergeIndex) const {
    auto it = idOfPiece_.find(piece);
    if (it == idOfPiece_.end()) fail("merge " + std::to_string(mergeIndex) + " uses \"" + piece.substr(0, 40) + "\", which is not in the vocab");
    return it->second;
  }

  void readMerges(const json& merges) {
    if (!merges.is_array() || merges.size() > kMaxMerges) fail("model.merges is not an array of at most 16M merges");
    for (size_t i = 0; i < merges.size(); ++i) {
      const json& merge = merges[i];
      std::string left, right;
      if (merge.is_string()) {
        const std::string line = merge.get<std::string>();
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
          fail("merge " + std::to_string(i) + " \"" + line.substr(0, 40) + "\" is not two tokens separated by one space");
        left = line.substr(0, space), right = line.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
        left = merge[0].get<std::string>(), right = merge[1].get<std::string>();
      } else {
        fail("merge " + std::to_string(i) + " is neither \"a b\" nor [\"a\", \"b\"]");
      }
      const int leftId = pieceId(left, i), rightId = pieceId(right, i);
      spec_.merges.add(leftId, rightId, pieceId(left + right, i), static_cast<int>(i));
    }
  }

  const json& sequenceItems(const json& node, const char* key, int depth) const {
    if (depth >= kMaxNesting) fail("Sequence nested more than " + std::to_string(kMaxNesting) + " deep");
    const json& items = field(node, key, "a Sequence");
    if (!items.is_array()) fail(std::string("Sequence.") + key + " is not an array");
    return items;
  }

  void readNormalizer(const json& node, int depth) {
    if (node.is_null()) return;
    const std::string type = node.is_object() ? string(node, "type", "normalizer") : "";
    if (type == "Sequence") {
      for (const json& item : sequenceItems(node, "normalizers", depth)) readNormalizer(item, depth + 1);
    } else if (type == "Prepend") {
      spec_.normalizer.push_back({HfNormalizerStep::Kind::Prepend, "", string(node, "prepend", "Prepend")});
    } else if (type == "Replace") {
      spec_.normalizer.push_back({HfNormalizerStep::Kind::Replace, stringPattern(node, "Replace normalizer"), string(node, "content", "Replace")});
    } else if (type == "NFC") {
      spec_.normalizer.push_back({HfNormalizerStep::Kind::Nfc, "", ""});
    } else {
      fail("normalizer \"" + type + "\" is not supported");
    }
  }

  std::string stringPattern(const json& node, const std::string& what) const {
    const json& pattern = field(node, "pattern", what);
    if (!pattern.is_object() || !pattern.contains("String") || !pattern["String"].is_string())
      fail(what + ": only a {\"String\": ...} pattern is supported, got " + pattern.dump().substr(0, 80));
    const std::string from = pattern["String"].get<std::string>();
    if (from.empty()) fail(what + ": empty pattern");
    return from;
  }

  void readPreTokenizer(const json& node, int depth) {
    if (node.is_null()) return;
    const std::string type = node.is_object() ? string(node, "type", "pre_tokenizer") : "";
    if (type == "Sequence") {
      for (const json& item : sequenceItems(node, "pretokenizers", depth)) readPreTokenizer(item, depth + 1);
    } else if (type == "ByteLevel") {
      spec_.byteLevel = true;
      spec_.addPrefixSpace = flag(node, "add_prefix_space", false);
      if (flag(node, "use_regex", true)) setSplit(SplitPattern::Gpt2);
    } else if (type == "Split") {
      const json& pattern = field(node, "pattern", "Split");
      if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
        fail("Split pre-tokenizer: only a {\"Regex\": ...} pattern is supported");
      const std::string regex = pattern["Regex"].get<std::string>();
      const auto known = knownSplitPattern(regex);
      if (!known) fail("Split pre-tokenizer regex is not one tscope knows (GPT-2, Llama 3, Qwen2): " + regex.substr(0, 200));
      if (node.value("behavior", std::string("Isolated")) != "Isolated" || flag(node, "invert", false))
        fail("Split pre-tokenizer: only behavior Isolated without invert is supported");
      setSplit(*known);
    } else if (type == "Metaspace") {
      spec_.metaspace = true;
      spec_.metaspaceReplacement = string(node, "replacement", "Metaspace");
      const std::string scheme = node.contains("prepend_scheme")        ? string(node, "prepend_scheme", "Metaspace")
                                 : flag(node, "add_prefix_space", true) ? "always"
                                                                        : "never";
      if (scheme == "always") spec_.metaspacePrepend = MetaspacePrepend::Always;
      else if (scheme == "first") spec_.metaspacePrepend = MetaspacePrepend::First;
      else if (scheme == "never") spec_.metaspacePrepend = MetaspacePrepend::Never;
      else fail("Metaspace prepend_scheme \"" + scheme + "\" is not always, first or never");
      spec_.metaspaceSplit = flag(node, "split", true);
    } else {
      fail("pre_tokenizer \"" + type + "\" is not supported");
    }
    if (spec_.metaspace && spec_.byteLevel) fail("pre_tokenizer mixes Metaspace and ByteLevel");
  }

  void setSplit(SplitPattern pattern) {
    if (spec_.split) fail("pre_tokenizer has two regex splits (a Split and a ByteLevel with use_regex)");
    spec_.split = pattern;
  }

  void readDecoder(const json& node, int depth) {
    if (node.is_null()) return;
    const std::string type = node.is_object() ? string(node, "type", "decoder") : "";
    if (type == "Sequence") {
      for (const json& item : sequenceItems(node, "decoders", depth)) readDecoder(item, depth + 1);
    } else if (type == "Replace") {
      spec_.decodeReplace.emplace_back(stringPattern(node, "Replace decoder"), string(node, "content", "Replace"));
    } else if (type == "ByteFallback") {
      spec_.decodeByteFallback = true;
    } else if (type == "Strip") {
      if (string(node, "content", "Strip") != " ") fail("Strip decoder: only content \" \" is supported");
      spec_.decodeStripLeadingSpaces = id(field(node, "start", "Strip"), "Strip.start");
    } else if (type == "Metaspace") {
      spec_.decodeReplace.emplace_back(string(node, "replacement", "Metaspace decoder"), " ");
      const bool prepends = node.value("prepend_scheme", std::string("always")) != "never" && flag(node, "add_prefix_space", true);
      spec_.decodeStripLeadingSpaces = prepends ? 1 : 0;
    } else if (type != "ByteLevel" && type != "Fuse") {
      fail("decoder \"" + type + "\" is not supported");
    }
  }

  void readPostProcessor(const json& node) {
    if (!node.is_object() || node.value("type", std::string()) != "TemplateProcessing") return;
    const json& single = field(node, "single", "TemplateProcessing");
    if (!single.is_array() || single.empty() || !single[0].is_object() || !single[0].contains("SpecialToken")) return;
    const json& first = single[0]["SpecialToken"];
    if (!first.is_object() || !first.contains("id") || !first["id"].is_string()) fail("TemplateProcessing: bad SpecialToken");
    auto it = idOfPiece_.find(first["id"].get<std::string>());
    for (const HfAddedToken& token : spec_.addedTokens)
      if (token.content == first["id"].get<std::string>()) spec_.bosId = token.id;
    if (spec_.bosId < 0 && it != idOfPiece_.end()) spec_.bosId = it->second;
  }

  HfTokenizerSpec spec_;
  std::vector<bool> filled_;                        // (V) ids seen so far
  std::unordered_map<std::string, int> idOfPiece_;  // vocab strings -> id, for merges and unk
};

}  // namespace

std::unique_ptr<Tokenizer> hfTokenizerFromText(const std::string& name, const std::string& tokenizerJson) {
  const tokenizer_json::Fields fields(name);
  if (tokenizerJson.size() > kMaxFileBytes) fields.fail("larger than 1 GiB");
  json root;
  try {
    root = json::parse(tokenizerJson);
  } catch (const json::exception& e) {
    fields.fail(std::string("bad JSON: ") + e.what());
  }
  if (!root.is_object()) fields.fail("expected a JSON object");
  const json& model = fields.field(root, "model", "");
  if (!model.is_object()) fields.fail("\"model\" is not an object");
  const std::string type = model.contains("type") ? fields.string(model, "type", "model") : "BPE";
  if (type == "WordPiece") return makeWordPieceTokenizer(tokenizer_json::wordPieceSpecFromJson(name, root));
  if (type != "BPE") fields.fail("model type \"" + type + "\" is not supported (only BPE and WordPiece)");
  return makeHfBpeTokenizer(Reader(name).read(root));
}

std::unique_ptr<Tokenizer> loadHfTokenizer(const std::string& tokenizerJsonPath) {
  return hfTokenizerFromText(tokenizerJsonPath, bpe::readWholeFile(tokenizerJsonPath, kMaxFileBytes));
}

}  // namespace tscope
