// Training data: the Brown corpus loader (tagged tokens -> plain text + tag byte spans), the
// token-to-tag alignment, the by-document split, and the synthetic task generators. All random
// choices go through tscope::Rng so a seed gives the same data on every platform.
#include "model/train/data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "model/core/file_check.h"
#include "model/core/error.h"

namespace tscope {

namespace fs = std::filesystem;

namespace {

std::string readWholeFile(const fs::path& path) {
  requireRegularFile(path.string(), "brown corpus");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("brown corpus: cannot open " + path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error("brown corpus: cannot read " + path.string());
  return buffer.str();
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// The white-space separated fields of one line.
std::vector<std::string> splitFields(const std::string& line) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && isSpace(line[i])) ++i;
    size_t start = i;
    while (i < line.size() && !isSpace(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// A number in [0, n) from one draw (the modulo bias is below 2^-40 for the n used here).
size_t randomBelow(Rng& rng, size_t n) { return static_cast<size_t>(rng.next() % n); }

// The decimal digits of `value`, `count` of them, least significant first (zero-padded).
std::vector<int> digitsLeastFirst(uint64_t value, int count) {
  std::vector<int> digits(static_cast<size_t>(count));
  for (int& digit : digits) {
    digit = static_cast<int>(value % 10);
    value /= 10;
  }
  return digits;
}

// a + b = c, the operands most significant digit first and the sum reversed (see data.h).
TaskExample additionExample(int digits, Rng& rng) {
  constexpr int kPlus = 10, kEquals = 11;
  uint64_t limit = 1;
  for (int i = 0; i < digits; ++i) limit *= 10;
  const uint64_t a = randomBelow(rng, limit), b = randomBelow(rng, limit);
  TaskExample example;
  for (const auto& [operand, sign] : {std::pair{a, kPlus}, std::pair{b, kEquals}}) {
    const std::vector<int> written = digitsLeastFirst(operand, digits);
    example.tokens.insert(example.tokens.end(), written.rbegin(), written.rend());
    example.tokens.push_back(sign);
  }
  example.scored.assign(example.tokens.size(), 0);
  for (int digit : digitsLeastFirst(a + b, digits + 1)) {
    example.tokens.push_back(digit);
    example.scored.push_back(1);
  }
  return example;
}

void requireValid(const TaskSpec& spec) {
  std::string problem = validateTaskSpec(spec);
  if (!problem.empty()) throw Error(problem);
}

}  // namespace

// --- Brown corpus --------------------------------------------------------------------------------

std::vector<std::string> BrownCorpus::categories() const {
  std::set<std::string> distinct;
  for (const BrownDocument& document : documents) distinct.insert(document.category);
  return {distinct.begin(), distinct.end()};
}

BrownDocument parseBrownDocument(const std::string& taggedText, const std::string& id, const std::string& category, const std::string& source) {
  BrownDocument document;
  document.id = id;
  document.category = category;
  std::istringstream lines(taggedText);
  std::string line;
  int lineNumber = 0;
  while (std::getline(lines, line)) {
    ++lineNumber;
    std::vector<std::string> tokens = splitFields(line);
    if (tokens.empty()) continue;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string& token = tokens[i];
      size_t slash = token.rfind('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == token.size())
        throw Error("brown corpus: " + source + ": line " + std::to_string(lineNumber) + ": malformed token \"" + token + "\" (expected word/tag)");
      if (i > 0) document.text += ' ';
      document.words.push_back({document.text.size(), slash, token.substr(slash + 1)});
      document.text.append(token, 0, slash);
    }
    document.text += '\n';
  }
  return document;
}

BrownCorpus loadBrownCorpus(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error("brown corpus: directory not found: " + dir + " (run scripts/setup.sh)");
  const fs::path catsPath = fs::path(dir) / "cats.txt";
  if (!fs::exists(catsPath)) throw Error("brown corpus: missing " + catsPath.string() + " (run scripts/setup.sh)");
  std::istringstream cats(readWholeFile(catsPath));
  BrownCorpus corpus;
  std::string line;
  int lineNumber = 0;
  while (std::getline(cats, line)) {
    ++lineNumber;
    std::vector<std::string> fields = splitFields(line);
    if (fields.empty()) continue;
    if (fields.size() != 2)
      throw Error("brown corpus: " + catsPath.string() + ": line " + std::to_string(lineNumber) + ": expected \"file category\", got \"" + line +
                  "\"");
    const fs::path documentPath = fs::path(dir) / fields[0];
    if (!fs::exists(documentPath)) throw Error("brown corpus: missing document " + documentPath.string());
    corpus.documents.push_back(parseBrownDocument(readWholeFile(documentPath), fields[0], fields[1], documentPath.string()));
  }
  if (corpus.documents.empty()) throw Error("brown corpus: " + catsPath.string() + " lists no documents");
  return corpus;
}

std::string coarseBrownTag(const std::string& tag) {
  std::string coarse = tag;
  if (coarse.starts_with("fw-")) coarse.erase(0, 3);
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* suffix : {"-tl", "-hl", "-nc"}) {
      if (coarse.size() > 3 && coarse.ends_with(suffix)) {
        coarse.resize(coarse.size() - 3);
        stripped = true;
      }
    }
  }
  return coarse;
}

std::vector<ByteSpan> tokenByteSpans(const Tokenizer& tokenizer, std::span<const int> ids) {
  std::vector<ByteSpan> spans;
  spans.reserve(ids.size());
  size_t offset = 0;
  for (int id : ids) {
    size_t length = tokenizer.tokenBytes(id).size();
    spans.push_back({offset, length});
    offset += length;
  }
  return spans;
}

std::vector<std::string> tagsForTokens(const BrownDocument& document, std::span<const ByteSpan> tokenSpans) {
  const std::vector<TaggedSpan>& words = document.words;  // sorted by offset, not overlapping
  std::vector<std::string> tags;
  tags.reserve(tokenSpans.size());
  for (const ByteSpan& token : tokenSpans) {
    const size_t begin = token.offset, end = token.offset + token.length;
    // First word that ends after the token begins; words from there on may overlap it.
    auto word =
        std::upper_bound(words.begin(), words.end(), begin, [](size_t position, const TaggedSpan& w) { return position < w.offset + w.length; });
    size_t bestOverlap = 0;
    const std::string* bestTag = nullptr;
    for (; word != words.end() && word->offset < end; ++word) {
      size_t overlap = std::min(end, word->offset + word->length) - std::max(begin, word->offset);
      if (overlap > bestOverlap) {
        bestOverlap = overlap;
        bestTag = &word->tag;
      }
    }
    tags.push_back(bestTag ? *bestTag : std::string());
  }
  return tags;
}

DocumentSplit splitDocuments(size_t documentCount, double validationFraction, uint64_t seed) {
  if (!(validationFraction >= 0.0 && validationFraction < 1.0))
    throw Error("validation fraction must be in [0, 1), got " + std::to_string(validationFraction));
  size_t validationCount = static_cast<size_t>(std::llround(validationFraction * static_cast<double>(documentCount)));
  if (validationFraction > 0.0 && documentCount >= 2) validationCount = std::max<size_t>(validationCount, 1);
  if (documentCount >= 1) validationCount = std::min(validationCount, documentCount - 1);

  std::vector<size_t> order(documentCount);
  for (size_t i = 0; i < documentCount; ++i) order[i] = i;
  Rng rng(seed);
  for (size_t i = documentCount; i > 1; --i) std::swap(order[i - 1], order[randomBelow(rng, i)]);  // Fisher-Yates

  DocumentSplit split;
  split.validation.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(validationCount));
  split.train.assign(order.begin() + static_cast<std::ptrdiff_t>(validationCount), order.end());
  std::sort(split.validation.begin(), split.validation.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

// --- Synthetic tasks -----------------------------------------------------------------------------

const char* taskName(SyntheticTask task) {
  switch (task) {
    case SyntheticTask::Copy: return "copy";
    case SyntheticTask::Reverse: return "reverse";
    case SyntheticTask::Sort: return "sort";
    case SyntheticTask::Induction: return "induction";
    case SyntheticTask::ModularAddition: return "modular-addition";
    case SyntheticTask::Addition: return "addition";
  }
  return "unknown";
}

SyntheticTask parseTaskName(const std::string& name) {
  for (SyntheticTask task : {SyntheticTask::Copy, SyntheticTask::Reverse, SyntheticTask::Sort, SyntheticTask::Induction,
                             SyntheticTask::ModularAddition, SyntheticTask::Addition})
    if (name == taskName(task)) return task;
  throw Error("unknown task \"" + name + "\" (expected copy, reverse, sort, induction, modular-addition or addition)");
}

std::string validateTaskSpec(const TaskSpec& spec) {
  constexpr int kMaxSize = 1 << 20;  // keeps every id and sequence length far from int overflow
  const std::string name = taskName(spec.task);
  switch (spec.task) {
    case SyntheticTask::Copy:
    case SyntheticTask::Reverse:
    case SyntheticTask::Sort:
    case SyntheticTask::Induction: {
      const int minLength = spec.task == SyntheticTask::Induction ? 2 : 1;
      if (spec.vocab < 1 || spec.vocab > kMaxSize)
        return name + ": vocab must be in [1, " + std::to_string(kMaxSize) + "], got " + std::to_string(spec.vocab);
      if (spec.length < minLength || spec.length > kMaxSize)
        return name + ": length must be in [" + std::to_string(minLength) + ", " + std::to_string(kMaxSize) + "], got " + std::to_string(spec.length);
      if (spec.task == SyntheticTask::Induction && spec.vocab < spec.length)
        return name + ": vocab must be >= length (the repeated sequence has distinct symbols), got vocab " + std::to_string(spec.vocab) +
               " and length " + std::to_string(spec.length);
      return "";
    }
    case SyntheticTask::ModularAddition:
      if (spec.modulus < 2 || spec.modulus > kMaxSize)
        return name + ": modulus must be in [2, " + std::to_string(kMaxSize) + "], got " + std::to_string(spec.modulus);
      return "";
    case SyntheticTask::Addition:
      if (spec.digits < 1 || spec.digits > 9) return name + ": digits must be in [1, 9], got " + std::to_string(spec.digits);
      return "";
  }
  return "task: unknown task value " + std::to_string(static_cast<int>(spec.task));
}

int taskVocabSize(const TaskSpec& spec) {
  requireValid(spec);
  switch (spec.task) {
    case SyntheticTask::Induction: return spec.vocab;
    case SyntheticTask::ModularAddition: return spec.modulus + 2;
    case SyntheticTask::Addition: return 12;
    default: return spec.vocab + 1;
  }
}

int taskSequenceLength(const TaskSpec& spec) {
  requireValid(spec);
  switch (spec.task) {
    case SyntheticTask::Induction: return 2 * spec.length;
    case SyntheticTask::ModularAddition: return 5;
    case SyntheticTask::Addition: return 3 * spec.digits + 3;  // a + b = c: digits, 1, digits, 1, digits + 1
    default: return 2 * spec.length + 1;
  }
}

std::vector<std::string> taskTokenNames(const TaskSpec& spec) {
  requireValid(spec);
  const bool sum = spec.task == SyntheticTask::ModularAddition || spec.task == SyntheticTask::Addition;
  const int numbers = spec.task == SyntheticTask::ModularAddition ? spec.modulus : spec.task == SyntheticTask::Addition ? 10 : spec.vocab;
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(taskVocabSize(spec)));
  for (int i = 0; i < numbers; ++i) names.push_back(std::to_string(i));
  if (sum) {
    names.push_back("+");
    names.push_back("=");
  } else if (spec.task != SyntheticTask::Induction) {
    names.push_back("SEP");
  }
  return names;
}

TaskExample makeExample(const TaskSpec& spec, Rng& rng) {
  requireValid(spec);
  TaskExample example;
  if (spec.task == SyntheticTask::ModularAddition) {
    const int p = spec.modulus;
    const int a = static_cast<int>(randomBelow(rng, static_cast<size_t>(p)));
    const int b = static_cast<int>(randomBelow(rng, static_cast<size_t>(p)));
    example.tokens = {a, p, b, p + 1, (a + b) % p};  // a + b = c
    example.scored = {0, 0, 0, 0, 1};
    return example;
  }
  if (spec.task == SyntheticTask::Addition) return additionExample(spec.digits, rng);

  const size_t n = static_cast<size_t>(spec.length);
  std::vector<int> x(n);
  if (spec.task == SyntheticTask::Induction) {
    // m distinct symbols (the first m of a partial Fisher-Yates shuffle of 0..vocab-1), m drawn
    // from [ceil(n/2), n]; the prefix uses only the other symbols, so each symbol of the repeat
    // has exactly one earlier occurrence. The repeat starts at a varying position, so a model
    // cannot find "the token after the earlier copy" by position: it needs an induction head.
    const size_t m = (n + 1) / 2 + randomBelow(rng, n - (n + 1) / 2 + 1);
    std::vector<int> symbols(static_cast<size_t>(spec.vocab));
    for (size_t i = 0; i < symbols.size(); ++i) symbols[i] = static_cast<int>(i);
    for (size_t i = 0; i < m; ++i) std::swap(symbols[i], symbols[i + randomBelow(rng, symbols.size() - i)]);
    const size_t prefix = 2 * (n - m), others = symbols.size() - m;
    example.tokens.clear();
    for (size_t i = 0; i < prefix; ++i) example.tokens.push_back(others > 0 ? symbols[m + randomBelow(rng, others)] : symbols[randomBelow(rng, m)]);
    for (int copy = 0; copy < 2; ++copy) example.tokens.insert(example.tokens.end(), symbols.begin(), symbols.begin() + (std::ptrdiff_t)m);
    example.scored.assign(2 * n, 0);
    for (size_t t = prefix + m + 1; t < 2 * n; ++t) example.scored[t] = 1;
    return example;
  }

  for (int& symbol : x) symbol = static_cast<int>(randomBelow(rng, static_cast<size_t>(spec.vocab)));
  std::vector<int> answer = x;
  if (spec.task == SyntheticTask::Reverse) std::reverse(answer.begin(), answer.end());
  if (spec.task == SyntheticTask::Sort) std::sort(answer.begin(), answer.end());
  example.tokens = x;
  example.tokens.push_back(spec.vocab);  // SEP
  example.tokens.insert(example.tokens.end(), answer.begin(), answer.end());
  example.scored.assign(2 * n + 1, 0);
  for (size_t t = n + 1; t < 2 * n + 1; ++t) example.scored[t] = 1;
  return example;
}

void fillTaskBatch(const TaskSpec& spec, int batch, Rng& rng, std::span<int> inputs, std::span<int> targets, std::span<uint8_t> scored) {
  const size_t steps = static_cast<size_t>(taskSequenceLength(spec) - 1);
  if (batch < 1) throw Error("batch must be >= 1, got " + std::to_string(batch));
  const size_t cells = static_cast<size_t>(batch) * steps;
  if (inputs.size() != cells || targets.size() != cells || scored.size() != cells)
    throw Error("task batch: arrays must hold B * T = " + std::to_string(cells) + " elements, got inputs " + std::to_string(inputs.size()) +
                ", targets " + std::to_string(targets.size()) + ", scored " + std::to_string(scored.size()));
  for (size_t b = 0; b < static_cast<size_t>(batch); ++b) {
    TaskExample example = makeExample(spec, rng);
    for (size_t t = 0; t < steps; ++t) {
      inputs[b * steps + t] = example.tokens[t];
      targets[b * steps + t] = example.tokens[t + 1];
      scored[b * steps + t] = example.scored[t + 1];
    }
  }
}

TaskBatch makeTaskBatch(const TaskSpec& spec, int batch, Rng& rng) {
  TaskBatch result;
  result.batch = batch;
  result.steps = taskSequenceLength(spec) - 1;
  if (batch < 1) throw Error("batch must be >= 1, got " + std::to_string(batch));
  const size_t cells = static_cast<size_t>(batch) * static_cast<size_t>(result.steps);
  result.inputs.resize(cells);
  result.targets.resize(cells);
  result.scored.resize(cells);
  fillTaskBatch(spec, batch, rng, result.inputs, result.targets, result.scored);
  return result;
}

}  // namespace tscope
