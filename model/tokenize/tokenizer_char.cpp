// Character-level tokenizer for tscope's own small models: one id per Unicode code point, id 0 for
// anything unknown. Stored as chars.json ({"chars": ["<unk>", "a", ...]}), written atomically
// (path.tmp, then rename) so a crash never leaves half a file.
#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "model/core/file_check.h"
#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {
namespace {

constexpr const char* kUnknownCharacter = "<unk>";

// True when `text` is exactly one valid UTF-8 code point.
bool isOneCodePoint(const std::string& text) {
  if (text.empty() || utf8CharacterLength(text, 0) != text.size()) return false;
  return text.size() > 1 || static_cast<unsigned char>(text[0]) < 0x80;  // one byte: valid only if ASCII
}

class CharTokenizer final : public Tokenizer {
 public:
  // `characters[0]` is "<unk>"; the rest are distinct single code points.
  explicit CharTokenizer(std::vector<std::string> characters) : characterOfId_(std::move(characters)) {
    asciiId_.fill(0);
    for (int id = 1; id < static_cast<int>(characterOfId_.size()); ++id) {
      const std::string& character = characterOfId_[id];
      if (!isOneCodePoint(character))
        throw Error("character tokenizer: entry " + std::to_string(id) + " (\"" + printableBytes(character) +
                    "\") is not exactly one UTF-8 code point");
      if (!idOfCharacter_.emplace(character, id).second)
        throw Error("character tokenizer: duplicate character \"" + character + "\" at id " + std::to_string(id));
      if (character.size() == 1) asciiId_[static_cast<unsigned char>(character[0])] = id;
    }
  }

  TokenizerKind kind() const override { return TokenizerKind::Char; }
  std::string description() const override { return "character-level"; }
  int vocabSize() const override { return static_cast<int>(characterOfId_.size()); }

  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    ids.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
      const auto lead = static_cast<unsigned char>(text[pos]);
      if (lead < 0x80) {  // fast path for ASCII
        ids.push_back(asciiId_[lead]);
        ++pos;
        continue;
      }
      // Invalid bytes come out as one-byte pieces, which are never in the table: <unk>.
      const size_t length = utf8CharacterLength(text, pos);
      auto it = idOfCharacter_.find(std::string(text.substr(pos, length)));
      ids.push_back(it == idOfCharacter_.end() ? 0 : it->second);
      pos += length;
    }
    return ids;
  }

  std::string decode(std::span<const int> ids) const override {
    std::string text;
    for (int id : ids) text += tokenBytes(id);
    return text;
  }

  std::string tokenBytes(int id) const override {
    if (id < 0 || id >= vocabSize())
      throw Error("token id " + std::to_string(id) + " is outside the vocab (0.." + std::to_string(vocabSize() - 1) + ")");
    return characterOfId_[id];
  }
  std::string tokenText(int id) const override { return printableBytes(tokenBytes(id)); }

 private:
  std::vector<std::string> characterOfId_;  // (V) id -> character; [0] = "<unk>"
  std::unordered_map<std::string, int> idOfCharacter_;
  std::array<int, 128> asciiId_{};  // ASCII byte -> id (0 when not in the vocab)
};

}  // namespace

std::unique_ptr<Tokenizer> makeCharTokenizer(const std::vector<std::string>& characters) {
  std::vector<std::string> table;
  table.reserve(characters.size() + 1);
  if (characters.empty() || characters[0] != kUnknownCharacter) table.push_back(kUnknownCharacter);
  table.insert(table.end(), characters.begin(), characters.end());
  return std::make_unique<CharTokenizer>(std::move(table));
}

std::unique_ptr<Tokenizer> loadCharTokenizer(const std::string& charsJsonPath) {
  requireRegularFile(charsJsonPath);
  std::ifstream in(charsJsonPath, std::ios::binary);
  if (!in) throw Error(charsJsonPath + ": cannot open file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw Error(charsJsonPath + ": read error");
  return charTokenizerFromJsonText(charsJsonPath, contents.str());
}

std::unique_ptr<Tokenizer> charTokenizerFromJsonText(const std::string& charsJsonPath, const std::string& text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(charsJsonPath + ": bad JSON: " + e.what());
  }
  if (!json.is_object() || !json.contains("chars") || !json["chars"].is_array())
    throw Error(charsJsonPath + ": expected {\"chars\": [\"<unk>\", ...]}");
  std::vector<std::string> characters;
  for (const auto& entry : json["chars"]) {
    if (!entry.is_string()) throw Error(charsJsonPath + ": chars[" + std::to_string(characters.size()) + "] is not a string: " + entry.dump());
    characters.push_back(entry.get<std::string>());
  }
  if (characters.empty() || characters[0] != kUnknownCharacter)
    throw Error(charsJsonPath + ": chars[0] must be \"<unk>\" (the id of unknown characters)");
  try {
    return std::make_unique<CharTokenizer>(std::move(characters));
  } catch (const Error& e) {
    throw Error(charsJsonPath + ": " + e.what());
  }
}

void saveCharTokenizer(const Tokenizer& tokenizer, const std::string& charsJsonPath) {
  if (tokenizer.kind() != TokenizerKind::Char) throw Error("saveCharTokenizer: the tokenizer is \"" + tokenizer.kindName() + "\", not \"char\"");
  nlohmann::json characters = nlohmann::json::array();
  for (int id = 0; id < tokenizer.vocabSize(); ++id) characters.push_back(tokenizer.tokenBytes(id));
  const std::string text = nlohmann::json{{"chars", characters}}.dump() + "\n";

  const std::string tmpPath = charsJsonPath + ".tmp";
  {
    std::ofstream out(tmpPath, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(tmpPath + ": cannot create file");
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(tmpPath);
      throw Error(tmpPath + ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmpPath, charsJsonPath, ec);
  if (ec) {
    std::filesystem::remove(tmpPath);
    throw Error(charsJsonPath + ": cannot replace with " + tmpPath + ": " + ec.message());
  }
}

}  // namespace tscope
