// The CSV the exports write (RFC 4180, '.' decimals): a field quoted only when it must be, and a
// number at full precision. One place, so every export reads back the same way.
#pragma once
#include <string>

namespace tscope {

// The text as one CSV field: as it is, or in double quotes (inner quotes doubled) when it holds a
// comma, a quote or a line break.
std::string csvField(const std::string& text);
// %.17g: reads back to the same double.
std::string csvNumber(double v);

}  // namespace tscope
