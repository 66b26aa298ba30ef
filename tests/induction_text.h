// The shipped induction-2l and the text its tests copy: 16 distinct letters, as in its training
// (assets/models/README.md), then the same half again without its last letter (31 tokens, its whole
// context). Positions 16..29 predict the repeat's tokens 17..30, which only an induction head knows.
#pragma once
#include <string>

namespace tscope::testing {

inline const std::string kInductionModel = std::string(TSCOPE_SOURCE_DIR) + "/assets/models/induction-2l";
inline const std::string kInductionHalf = "qwertyuiopasdfgh";
inline const std::string kInductionRepeated = kInductionHalf + kInductionHalf.substr(0, kInductionHalf.size() - 1);

}  // namespace tscope::testing
