// The BPE pieces shared by the GPT-2 and tokenizer.json tokenizers: byte-level alphabet, UTF-8,
// file reading and the merge loop. Candidates of one rank are popped in position order, which is
// GPT-2's left-to-right scan; a merge only creates pairs containing the new token, never the pair
// being merged, so ranks don't mix.
#include "model/tokenize/bpe_core.h"

#include <fstream>
#include <queue>
#include <sstream>

#include "model/core/file_check.h"
#include "model/core/error.h"

namespace tscope::bpe {

std::array<char32_t, 256> byteLevelCodePoints() {
  std::array<char32_t, 256> map{};
  std::array<bool, 256> printable{};
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  char32_t shifted = 256;
  for (int b = 0; b < 256; ++b) map[b] = printable[b] ? static_cast<char32_t>(b) : shifted++;
  return map;
}

std::unordered_map<std::string, unsigned char> byteLevelBytesOfCharacters() {
  const auto codePoints = byteLevelCodePoints();
  std::unordered_map<std::string, unsigned char> byteOf;
  for (int b = 0; b < 256; ++b) byteOf[encodeUtf8(codePoints[b])] = static_cast<unsigned char>(b);
  return byteOf;
}

int byteOfFallbackPiece(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece.back() != '>') return -1;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

std::string encodeUtf8(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp <= 0x10FFFF) {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    throw Error("internal: code point above U+10FFFF");
  }
  return out;
}

std::string readWholeFile(const std::string& path, size_t maxBytes) {
  requireRegularFile(path);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(path + ": cannot open file");
  const auto size = static_cast<size_t>(in.tellg());
  if (size > maxBytes) throw Error(path + ": file of " + std::to_string(size) + " bytes is larger than the limit of " + std::to_string(maxBytes));
  in.seekg(0);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) throw Error(path + ": read error");
  return contents.str();
}

namespace {
struct Candidate {
  int rank, pos, leftId, rightId;  // the pair (symbol pos, its next) as it was when pushed
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};
}  // namespace

void MergeTable::apply(MergeScratch& s, const Observer& observer) const {
  const int n = static_cast<int>(s.ids.size());
  s.prev.resize(n), s.next.resize(n);
  for (int i = 0; i < n; ++i) {
    s.prev[i] = i - 1;
    s.next[i] = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> candidates;
  auto pushPair = [&](int pos) {
    if (pos < 0 || s.next[pos] < 0) return;
    int leftId = s.ids[pos], rightId = s.ids[s.next[pos]];
    auto it = mergeOfPair_.find(pairKey(leftId, rightId));
    if (it != mergeOfPair_.end()) candidates.push({it->second.rank, pos, leftId, rightId});
  };
  auto stillValid = [&](const Candidate& c) { return s.ids[c.pos] == c.leftId && s.next[c.pos] >= 0 && s.ids[s.next[c.pos]] == c.rightId; };
  for (int i = 0; i + 1 < n; ++i) pushPair(i);
  if (observer) observer(Merge{-1, -1}, -1, -1);
  std::vector<Candidate> sameRank;
  while (!candidates.empty()) {
    if (!stillValid(candidates.top())) {
      candidates.pop();
      continue;
    }
    const Candidate top = candidates.top();
    sameRank.clear();
    while (!candidates.empty() && candidates.top().rank == top.rank) {
      sameRank.push_back(candidates.top());
      candidates.pop();
    }
    const Merge& merge = mergeOfPair_.at(pairKey(top.leftId, top.rightId));
    for (const Candidate& c : sameRank) {
      if (!stillValid(c)) continue;  // its left symbol was taken by the merge just before it
      int right = s.next[c.pos];
      s.ids[c.pos] = merge.resultId;
      s.ids[right] = -1;
      s.next[c.pos] = s.next[right];
      if (s.next[right] >= 0) s.prev[s.next[right]] = c.pos;
      pushPair(s.prev[c.pos]);
      pushPair(c.pos);
    }
    if (observer) observer(merge, top.leftId, top.rightId);
  }
}

void ByteTableTokenizer::checkId(int id) const {
  if (id < 0 || id >= vocabSize())
    throw Error("token id " + std::to_string(id) + " is outside the vocab (0.." + std::to_string(vocabSize() - 1) + ")");
}

std::string ByteTableTokenizer::tokenBytes(int id) const {
  checkId(id);
  return bytesOfId_[id];
}

std::string ByteTableTokenizer::tokenText(int id) const { return printableBytes(tokenBytes(id)); }

std::string ByteTableTokenizer::decode(std::span<const int> ids) const {
  std::string text;
  for (int id : ids) {
    checkId(id);
    text += bytesOfId_[id];
  }
  return text;
}

}  // namespace tscope::bpe
