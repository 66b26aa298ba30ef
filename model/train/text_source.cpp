// Text corpora as training data (see text_source.h): the checked reading of a text file, its
// split into paragraphs or lines, and the one DataSource for text, which learns its BPE on the
// training text and round-trips it through the GPT-2 files a saved model carries.
#include "model/train/text_source.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unistd.h>

#include "model/core/file_check.h"
#include "model/core/error.h"
#include "model/tokenize/bpe_train.h"
#include "model/train/masked_lm.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

// Only white space (or nothing).
bool isBlank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; });
}

class TextCorpusSource final : public DataSource {
 public:
  TextCorpusSource(const TextCorpus& corpus, int bpeVocab, int seqLen, bool maskedLm)
      : seqLen_(seqLen),
        maskedLm_(maskedLm),
        name_(corpus.name),
        documents_(corpus.trainDocuments),
        validationDocuments_(corpus.validationDocuments) {
    if (maskedLm_ && seqLen_ < 3) throw Error(name_ + ": a masked-LM window is [CLS] text [SEP], so seq_len must be at least 3");
    bpe_ = trainBpe(corpus.train, bpeVocab);
    textVocab_ = static_cast<int>(bpe_.tokens.size());
    // A masked LM's special tokens follow the BPE: vocabulary entries no text encodes to.
    if (maskedLm_)
      for (std::string_view name : kMaskedLmTokenNames) bpe_.tokens.emplace_back(name);
    // Load it back through the GPT-2 file format, as a saved model will be.
    static std::atomic<int> sources{0};  // two sources built at once in one process get their own folders
    const fs::path tmp =
        fs::temp_directory_path() / ("tscope-bpe-" + std::to_string(::getpid()) + "-" + std::to_string(sources++) + "-" + std::to_string(bpeVocab));
    writeGpt2TokenizerFiles(bpe_, tmp.string());
    tokenizer_ = loadGpt2Tokenizer((tmp / "vocab.json").string(), (tmp / "merges.txt").string());
    std::error_code ec;
    fs::remove_all(tmp, ec);
    train_ = tokenizer_->encode(corpus.train);
    validation_ = tokenizer_->encode(corpus.validation);
    for (const auto& [split, stream] : {std::pair{"training", &train_}, std::pair{"validation", &validation_}})
      if ((int)stream->size() <= seqLen_ + 1)
        throw Error(name_ + ": the " + split + " text (" + std::to_string(stream->size()) + " tokens) is too short for one training sequence of " +
                    std::to_string(seqLen_) + " tokens (use a longer text, a shorter seq_len or another val fraction)");
    probe_ = corpus.probeText.empty() ? std::vector<int>(validation_.begin(), validation_.begin() + std::min(kProbeTokens, seqLen_))
                                      : tokenizer_->encode(corpus.probeText);
    if (maskedLm_) {
      specials_ = findMaskedLmTokens(*tokenizer_);
      if (!specials_.complete()) throw Error(name_ + ": the masked-LM special tokens did not survive the tokenizer files");
      if ((int)probe_.size() > seqLen_ - 2) probe_.resize(seqLen_ - 2);
      probe_.insert(probe_.begin(), specials_.cls);
      probe_.push_back(specials_.sep);
    }
  }
  int vocabSize() const override { return tokenizer_->vocabSize(); }
  int sequenceLength() const override { return seqLen_; }
  void trainBatch(int batch, Rng& rng, int* inputs, int* targets, uint8_t* scored) override {
    const uint64_t starts = train_.size() - seqLen_ - 1;
    for (int b = 0; b < batch; ++b) fill(train_, static_cast<size_t>(rng.next() % starts), b, rng, inputs, targets, scored);
  }
  void validationBatch(int batch, int index, int* inputs, int* targets, uint8_t* scored) override {
    const size_t starts = validation_.size() - seqLen_ - 1;
    for (int b = 0; b < batch; ++b) {
      const size_t sequence = (size_t)index * batch + b;
      Rng masks(0x5EED0000ull + sequence);  // the same masked positions at every evaluation
      fill(validation_, sequence * seqLen_ % starts, b, masks, inputs, targets, scored);
    }
  }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  void saveTokenizer(const std::string& dir) const override { writeGpt2TokenizerFiles(bpe_, dir); }
  std::vector<int> probeSequence() const override { return probe_; }
  std::string describe() const override {
    std::ostringstream out;
    out << name_ << ": " << documents_ << " training documents (" << train_.size() << " tokens), " << validationDocuments_
        << " validation documents (" << validation_.size() << " tokens), BPE of " << textVocab_ << " tokens";
    if (maskedLm_) out << " and 4 special tokens, masked LM (15% of tokens hidden, BERT's 80/10/10)";
    return out.str();
  }

 private:
  static constexpr int kProbeTokens = 20;
  // Row b of a batch from the stream at `start`: the next token at each position, or a masked-LM
  // window of seqLen - 2 text tokens masked by `rng`.
  void fill(const std::vector<int>& stream, size_t start, int b, Rng& rng, int* inputs, int* targets, uint8_t* scored) const {
    const size_t row = (size_t)b * seqLen_;
    if (maskedLm_) {
      maskWindow(std::span<const int>(stream.data() + start, seqLen_ - 2), specials_, textVocab_, rng, inputs + row, targets + row, scored + row);
      return;
    }
    for (int t = 0; t < seqLen_; ++t) {
      inputs[(size_t)b * seqLen_ + t] = stream[start + t];
      targets[(size_t)b * seqLen_ + t] = stream[start + t + 1];
      scored[(size_t)b * seqLen_ + t] = 1;
    }
  }
  int seqLen_;
  bool maskedLm_ = false;
  int textVocab_ = 0;  // the BPE's tokens (a masked LM's special tokens come after them)
  MaskedLmTokens specials_;
  std::string name_;
  BpeTrainingResult bpe_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int> train_, validation_, probe_;
  size_t documents_ = 0, validationDocuments_ = 0;
};

}  // namespace

std::unique_ptr<DataSource> makeTextCorpusSource(const TextCorpus& corpus, int bpeVocab, int seqLen, bool maskedLm) {
  return std::make_unique<TextCorpusSource>(corpus, bpeVocab, seqLen, maskedLm);
}

std::string readTrainingText(const std::string& path) {
  const std::string name = "text data " + path;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(name + ": no such file");
  if (fs::is_directory(path, ec)) throw Error(name + ": cannot be read (it is a directory)");
  requireRegularFile(path, name);
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) throw Error(name + ": cannot be read (" + ec.message() + ")");
  if (size > kMaxTrainingTextBytes)
    throw Error(name + ": " + std::to_string(size) + " bytes is larger than the " + std::to_string(kMaxTrainingTextBytes >> 20) + " MB limit");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(name + ": cannot be read");
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) throw Error(name + ": cannot be read (short read)");
  if (isBlank(text)) throw Error(name + ": is empty (no text to train on)");
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8CharacterLength(text, pos);
    if (length == 1 && static_cast<unsigned char>(text[pos]) >= 0x80) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[pos]));
      throw Error(name + ": not valid UTF-8 at byte offset " + std::to_string(pos) + " (" + hex + ")");
    }
    pos += length;
  }
  return text;
}

std::vector<std::string> textDocuments(const std::string& text) {
  std::vector<std::string> paragraphs, lines;
  std::string paragraph, line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (isBlank(line)) {
      if (!paragraph.empty()) paragraphs.push_back(std::move(paragraph));
      paragraph.clear();
      continue;
    }
    paragraph += line + "\n";
    lines.push_back(line + "\n");
  }
  if (!paragraph.empty()) paragraphs.push_back(std::move(paragraph));
  return paragraphs.size() >= kMinParagraphs ? paragraphs : lines;
}

TextCorpus splitTextCorpus(const std::string& name, const std::vector<std::string>& documents, double validationFraction) {
  const DocumentSplit split = splitDocuments(documents.size(), validationFraction, 20241123);
  TextCorpus corpus;
  corpus.name = name;
  for (const auto& [indices, text] : {std::pair{&split.train, &corpus.train}, std::pair{&split.validation, &corpus.validation}})
    for (size_t i : *indices) {
      *text += documents[i];
      if (!text->ends_with('\n')) *text += '\n';
      *text += '\n';
    }
  corpus.trainDocuments = split.train.size();
  corpus.validationDocuments = split.validation.size();
  return corpus;
}

TextCorpus textFileCorpus(const std::string& path, double validationFraction) {
  return splitTextCorpus(path, textDocuments(readTrainingText(path)), validationFraction);
}

}  // namespace tscope
