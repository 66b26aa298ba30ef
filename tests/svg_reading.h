// Reading the vector figures back in tests: the attributes of a tag and the tags of a class, by
// plain string search. (No <regex>: GCC 12 under AddressSanitizer warns inside it, and the ASan
// build treats warnings as errors.)
#pragma once
#include <string>
#include <vector>

namespace tscope::testing {

// The value of attribute `name` in the tag starting at `at` ("" when it has none).
inline std::string attribute(const std::string& svg, size_t at, const std::string& name) {
  const size_t end = svg.find('>', at);
  const size_t key = svg.find(" " + name + "=\"", at);
  if (key == std::string::npos || key > end) return "";
  const size_t begin = key + name.size() + 3;
  return svg.substr(begin, svg.find('"', begin) - begin);
}

// Where each <tag class="cls" starts.
inline std::vector<size_t> tagsOfClass(const std::string& svg, const std::string& tag, const std::string& cls) {
  std::vector<size_t> at;
  const std::string open = "<" + tag + " class=\"" + cls + "\"";
  for (size_t i = svg.find(open); i != std::string::npos; i = svg.find(open, i + 1)) at.push_back(i);
  return at;
}

}  // namespace tscope::testing
