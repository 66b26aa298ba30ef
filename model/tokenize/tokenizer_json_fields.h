// Internal: what the tokenizer.json readers share (tokenizer_json.cpp for BPE,
// tokenizer_wordpiece_json.cpp for WordPiece): typed field access that names the file and the
// field in its one-line error, the id bounds, and the added_tokens list.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/core/error.h"
#include "model/tokenize/tokenizer_hf.h"
#include "model/tokenize/tokenizer_wordpiece.h"

namespace tscope::tokenizer_json {

inline constexpr int64_t kMaxVocab = int64_t(1) << 22;  // 4M tokens
inline constexpr size_t kMaxTokenBytes = 1 << 16;

class Fields {
 public:
  explicit Fields(std::string name) : name_(std::move(name)) {}

  [[noreturn]] void fail(const std::string& problem) const { throw Error(name_ + ": " + problem); }

  const nlohmann::json& field(const nlohmann::json& object, const char* key, const std::string& where) const {
    if (!object.contains(key)) fail("missing \"" + std::string(key) + "\"" + (where.empty() ? "" : " in " + where));
    return object[key];
  }
  std::string string(const nlohmann::json& object, const char* key, const std::string& where) const {
    const nlohmann::json& value = field(object, key, where);
    if (!value.is_string()) fail(where + "." + key + " is not a string");
    return value.get<std::string>();
  }
  bool flag(const nlohmann::json& object, const char* key, bool fallback) const {
    if (!object.contains(key) || object[key].is_null()) return fallback;
    if (!object[key].is_boolean()) fail(std::string("\"") + key + "\" is not true or false");
    return object[key].get<bool>();
  }
  int id(const nlohmann::json& value, const std::string& what) const {
    if (!value.is_number_integer()) fail(what + " is not an integer: " + value.dump().substr(0, 40));
    const int64_t v = value.get<int64_t>();
    if (v < 0 || v >= kMaxVocab) fail(what + " " + std::to_string(v) + " is outside 0.." + std::to_string(kMaxVocab - 1));
    return static_cast<int>(v);
  }

  // "added_tokens": [{"id", "content", "special", "lstrip", "rstrip", "normalized"}, ...].
  std::vector<HfAddedToken> addedTokens(const nlohmann::json& root) const {
    std::vector<HfAddedToken> tokens;
    if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return tokens;
    const nlohmann::json& list = root["added_tokens"];
    if (!list.is_array() || list.size() > size_t(kMaxVocab)) fail("\"added_tokens\" is not an array of at most 4M tokens");
    for (const nlohmann::json& entry : list) {
      if (!entry.is_object()) fail("an added token is not an object");
      HfAddedToken token;
      token.id = id(field(entry, "id", "an added token"), "added token id");
      token.content = string(entry, "content", "added token " + std::to_string(token.id));
      if (token.content.empty() || token.content.size() > kMaxTokenBytes)
        fail("added token " + std::to_string(token.id) + " has an empty or huge content");
      token.special = flag(entry, "special", false);
      token.lstrip = flag(entry, "lstrip", false);
      token.rstrip = flag(entry, "rstrip", false);
      token.normalized = flag(entry, "normalized", !token.special);
      tokens.push_back(std::move(token));
    }
    return tokens;
  }

  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// The WordPiece parts of a tokenizer.json whose model.type is "WordPiece" (tokenizer_wordpiece_json.cpp).
WordPieceSpec wordPieceSpecFromJson(const std::string& name, const nlohmann::json& root);

}  // namespace tscope::tokenizer_json
