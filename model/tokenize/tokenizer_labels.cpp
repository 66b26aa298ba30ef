// An image classifier's class names as its tokenizer (tokenizer.h: makeLabelTokenizer): the ids the
// classifier's logits stand for, shown by every panel that names a token.
#include <nlohmann/json.hpp>

#include "model/core/error.h"
#include "model/io/npy.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {

namespace {

class LabelTokenizer : public Tokenizer {
 public:
  explicit LabelTokenizer(std::vector<std::string> labels) : labels_(std::move(labels)) {}
  TokenizerKind kind() const override { return TokenizerKind::Labels; }
  std::string description() const override { return std::to_string(labels_.size()) + " class names"; }
  int vocabSize() const override { return static_cast<int>(labels_.size()); }
  std::vector<int> encode(std::string_view text) const override {
    std::vector<int> ids;
    size_t at = 0;
    while (at < text.size()) {
      const size_t start = text.find_first_not_of(" \t\r\n", at);
      if (start == std::string_view::npos) break;
      const size_t end = std::min(text.size(), text.find_first_of(" \t\r\n", start));
      const std::string_view word = text.substr(start, end - start);
      for (size_t i = 0; i < labels_.size(); ++i)
        if (labels_[i] == word) {
          ids.push_back(static_cast<int>(i));
          break;
        }
      at = end;
    }
    return ids;
  }
  std::string decode(std::span<const int> ids) const override {
    std::string text;
    for (int id : ids) text += (text.empty() ? "" : " ") + tokenBytes(id);
    return text;
  }
  std::string tokenBytes(int id) const override {
    if (id < 0 || id >= vocabSize()) throw Error("class " + std::to_string(id) + " is outside [0, " + std::to_string(vocabSize()) + ")");
    return labels_[id];
  }

 private:
  std::vector<std::string> labels_;
};

}  // namespace

std::unique_ptr<Tokenizer> makeLabelTokenizer(std::vector<std::string> labels) {
  if (labels.empty()) throw Error("an image model needs at least one class name");
  return std::make_unique<LabelTokenizer>(std::move(labels));
}

std::unique_ptr<Tokenizer> labelTokenizerFromJsonText(const std::string& name, const std::string& text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(name + ": bad JSON: " + e.what());
  }
  if (!json.is_object() || !json.contains("labels") || !json["labels"].is_array() || json["labels"].empty())
    throw Error(name + ": expected {\"labels\": [\"cat\", ...]} with at least one class name");
  std::vector<std::string> labels;
  for (const auto& entry : json["labels"]) {
    if (!entry.is_string()) throw Error(name + ": labels[" + std::to_string(labels.size()) + "] is not a string: " + entry.dump());
    labels.push_back(entry.get<std::string>());
  }
  return makeLabelTokenizer(std::move(labels));
}

void saveLabelTokenizer(const Tokenizer& tokenizer, const std::string& labelsJsonPath) {
  if (tokenizer.kind() != TokenizerKind::Labels) throw Error("saveLabelTokenizer: the tokenizer is \"" + tokenizer.kindName() + "\", not \"labels\"");
  nlohmann::json labels = nlohmann::json::array();
  for (int id = 0; id < tokenizer.vocabSize(); ++id) labels.push_back(tokenizer.tokenBytes(id));
  writeFileAtomically(labelsJsonPath, nlohmann::json{{"labels", labels}}.dump() + "\n");
}

}  // namespace tscope
