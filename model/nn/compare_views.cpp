// Comparing two forwards (compare_views.h).
#include "model/nn/compare_views.h"

#include <algorithm>
#include <cmath>

#include "model/core/error.h"
#include "model/core/softmax.h"

namespace tscope {

double klDivergence(std::span<const float> logitsP, std::span<const float> logitsQ) {
  if (logitsP.size() != logitsQ.size() || logitsP.empty())
    throw Error("KL divergence: the two distributions have " + std::to_string(logitsP.size()) + " and " + std::to_string(logitsQ.size()) +
                " entries (the models' vocabularies differ)");
  const double lseP = logSumExp(logitsP), lseQ = logSumExp(logitsQ);
  double kl = 0;
  for (size_t i = 0; i < logitsP.size(); ++i) {
    const double logP = logitsP[i] - lseP;
    if (!std::isfinite(logP)) continue;  // p = 0 adds nothing
    kl += std::exp(logP) * (logP - (logitsQ[i] - lseQ));
  }
  return std::max(kl, 0.0);  // rounding can leave a tiny negative for equal rows
}

HeadPattern headPattern(const float* map, int T) {
  HeadPattern out;
  if (T <= 0) return out;
  for (int t = 0; t < T; ++t) {
    const float* row = map + (size_t)t * T;
    const int previous = std::max(t - 1, 0);
    double entropy = 0, toPrevious = 0, toFirst = 0;
    for (int j = 0; j < T; ++j) {
      const double p = std::isfinite(row[j]) ? row[j] : 0.0;
      if (p > 0) entropy -= p * std::log(p);
      toPrevious += std::abs(p - (j == previous ? 1.0 : 0.0));
      toFirst += std::abs(p - (j == 0 ? 1.0 : 0.0));
    }
    out.entropy += entropy;
    out.previousToken += 0.5 * toPrevious;
    out.firstToken += 0.5 * toFirst;
  }
  out.entropy /= T;
  out.previousToken /= T;
  out.firstToken /= T;
  return out;
}

std::vector<HeadPattern> layerPatterns(const AttentionRows& maps, int layerIndex) {
  std::vector<HeadPattern> out;
  const int T = maps.rows();
  std::vector<float> map((size_t)T * T);
  for (int h = 0; h < maps.heads(); ++h) {
    maps.map(layerIndex, h, false, map.data());
    out.push_back(headPattern(map.data(), T));
  }
  return out;
}

std::vector<TokenSpan> spansOf(const std::vector<std::string>& pieces) {
  std::vector<TokenSpan> spans;
  size_t at = 0;
  for (const std::string& piece : pieces) {
    spans.push_back({at, at + piece.size()});
    at += piece.size();
  }
  return spans;
}

namespace {

// The token of `spans` holding byte `b` (the last one starting at or before it).
int tokenAt(const std::vector<TokenSpan>& spans, size_t b) {
  const auto it = std::upper_bound(spans.begin(), spans.end(), b, [](size_t byte, const TokenSpan& s) { return byte < s.begin; });
  return std::max(0, static_cast<int>(it - spans.begin()) - 1);
}

}  // namespace

std::vector<float> alignedMap(const float* right, const std::vector<TokenSpan>& rightSpans, const std::vector<TokenSpan>& leftSpans) {
  if (rightSpans.empty() || leftSpans.empty()) throw Error("aligning two tokenizations: one of them has no tokens");
  if (rightSpans.back().end != leftSpans.back().end)
    throw Error("aligning two tokenizations: they cover " + std::to_string(leftSpans.back().end) + " and " + std::to_string(rightSpans.back().end) +
                " bytes (not the same text)");
  const int Tl = static_cast<int>(leftSpans.size()), Tr = static_cast<int>(rightSpans.size());
  std::vector<int> keyTo(Tr);  // right key k -> the left token holding its first byte
  for (int k = 0; k < Tr; ++k) keyTo[k] = tokenAt(leftSpans, rightSpans[k].begin);
  std::vector<float> out((size_t)Tl * Tl, 0.0f);
  for (int i = 0; i < Tl; ++i) {
    if (leftSpans[i].end <= leftSpans[i].begin) throw Error("aligning two tokenizations: token " + std::to_string(i) + " covers no bytes");
    const int r = tokenAt(rightSpans, leftSpans[i].end - 1);
    for (int k = 0; k < Tr; ++k) {
      const float p = right[(size_t)r * Tr + k];
      if (std::isfinite(p)) out[(size_t)i * Tl + keyTo[k]] += p;
    }
  }
  return out;
}

MapDifference mapDifference(std::span<const float> left, int Tl, std::span<const float> right, int Tr, bool sameTokens,
                            const std::vector<TokenSpan>& leftSpans, const std::vector<TokenSpan>& rightSpans) {
  MapDifference out;
  std::vector<float> rightSeen;
  std::span<const float> r = right;
  if (Tl == Tr) {
    out.note = sameTokens ? "the same tokens on both sides: right - left, cell by cell"
                          : "different tokens at the same positions: right - left, position by position";
  } else if (!leftSpans.empty() && !rightSpans.empty() && (int)leftSpans.size() == Tl && (int)rightSpans.size() == Tr &&
             leftSpans.back().end == rightSpans.back().end) {
    try {
      rightSeen = alignedMap(right.data(), rightSpans, leftSpans);
    } catch (const Error& e) {
      out.note = std::string("no difference map: ") + e.what();
      return out;
    }
    r = rightSeen;
    out.aligned = true;
    out.note = "the two tokenizers cut the text differently (" + std::to_string(Tl) + " and " + std::to_string(Tr) +
               " tokens): the right map is lined up with the left tokens by their character spans";
  } else {
    out.note = "no difference map: the two sides have " + std::to_string(Tl) + " and " + std::to_string(Tr) + " tokens of different texts";
    return out;
  }
  out.difference.resize((size_t)Tl * Tl);
  out.right.assign(r.begin(), r.begin() + (size_t)Tl * Tl);
  for (size_t i = 0; i < out.difference.size(); ++i) {
    const float a = std::isfinite(left[i]) ? left[i] : 0.0f, b = std::isfinite(r[i]) ? r[i] : 0.0f;
    out.difference[i] = b - a;
    out.maxAbs = std::max(out.maxAbs, (double)std::abs(b - a));
  }
  return out;
}

}  // namespace tscope
