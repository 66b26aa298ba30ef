// The one exception type the engine throws for bad input (files, configs, prompts, flags).
// Its message is a single line that names the problem; callers show it and carry on or exit.
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tscope {

// `text` as one line of a message: newlines, tabs and the other control bytes written as escapes
// (\n, \r, \t, \xNN), so that a name read from a file cannot break a message in two; longer than
// maxChars bytes, it is cut (at a UTF-8 character's start) and ends in "...".
inline std::string oneLine(std::string_view text, size_t maxChars = std::string::npos) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\t') out += "\\t";
    else if (byte < 0x20 || byte == 0x7f) {
      char escape[5];
      std::snprintf(escape, sizeof escape, "\\x%02x", byte);
      out += escape;
    } else {
      out += ch;
    }
  }
  if (out.size() > maxChars && maxChars >= 3) {
    size_t cut = maxChars - 3;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

struct Error : std::runtime_error {
  explicit Error(const std::string& message) : std::runtime_error(oneLine(message)) {}
  explicit Error(const char* message) : Error(std::string(message)) {}
};

}  // namespace tscope
