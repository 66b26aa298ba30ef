// Text as training data: one DataSource for every corpus that is plain text with a BPE vocabulary
// learned on its training part (the Brown corpus, any UTF-8 text file given as --data text:path=FILE),
// fed from the train and validation texts alone; and the reading and splitting of a text file.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/train/trainer.h"

namespace tscope {

// A corpus split into its training and validation text (documents joined by blank lines).
struct TextCorpus {
  std::string name;        // starts every message: "Brown corpus", or the file's path
  std::string train;       // the training documents
  std::string validation;  // the validation documents
  size_t trainDocuments = 0, validationDocuments = 0;
  std::string probeText;  // what probeSequence() encodes; "": the first 20 tokens of the validation text
};

// Learns a BPE of `bpeVocab` tokens on corpus.train and serves both splits as token streams cut
// into sequences of `seqLen` tokens. Throws tscope::Error naming the corpus when a split is shorter
// than one training sequence. `maskedLm`: the vocabulary gets [PAD] [CLS] [SEP] [MASK] after the BPE
// and each sequence is a masked-LM window (masked_lm.h) instead of next-token targets.
std::unique_ptr<DataSource> makeTextCorpusSource(const TextCorpus& corpus, int bpeVocab, int seqLen, bool maskedLm = false);

// The largest text file read as training data.
constexpr size_t kMaxTrainingTextBytes = size_t{256} << 20;

// The file's bytes. Throws tscope::Error, one line naming the file: missing, not a readable file,
// larger than kMaxTrainingTextBytes, empty (or only white space), not valid UTF-8 (at which byte).
std::string readTrainingText(const std::string& path);

// The documents of a text: its paragraphs (runs of non-blank lines, separated by blank lines), or
// its non-blank lines when it has fewer than kMinParagraphs paragraphs. A paragraph keeps its lines
// joined by '\n'; '\r' line ends are dropped.
constexpr size_t kMinParagraphs = 20;
std::vector<std::string> textDocuments(const std::string& text);

// Documents split whole (splitDocuments with one fixed seed, so every run over the same documents
// and fraction shares the split) into train and validation, each document '\n'-ended and followed by
// a blank line. `name` becomes TextCorpus::name.
TextCorpus splitTextCorpus(const std::string& name, const std::vector<std::string>& documents, double validationFraction);

// The Brown corpus (spec.corpusDir, or the copy the set-up installs) split as training splits it:
// the same validation documents for the same spec.validationFraction. Throws tscope::Error when the
// corpus is not installed.
TextCorpus brownTextCorpus(const DataSpec& spec);

// A text file's documents split so (readTrainingText, textDocuments, splitTextCorpus).
TextCorpus textFileCorpus(const std::string& path, double validationFraction);

}  // namespace tscope
