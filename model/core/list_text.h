// Comma-separated lists as the command line and session files write them ("1.0,1.3,0.mlp",
// "no-causal-mask,skip-mlp:1"): the items with the blanks (spaces, tabs) around them trimmed.
#pragma once
#include <algorithm>
#include <string_view>
#include <vector>

namespace tscope {

inline std::string_view trimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The trimmed items between commas; none for a text of blanks only. An empty item ("a,,b") is kept
// (as ""), for the caller to name.
inline std::vector<std::string_view> splitList(std::string_view text) {
  std::vector<std::string_view> items;
  if (trimBlanks(text).empty()) return items;
  size_t from = 0;
  while (from <= text.size()) {
    const size_t comma = std::min(text.find(',', from), text.size());
    items.push_back(trimBlanks(text.substr(from, comma - from)));
    from = comma + 1;
  }
  return items;
}

}  // namespace tscope
