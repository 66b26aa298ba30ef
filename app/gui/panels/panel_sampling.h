// Next-token panel: the distribution through each sampling stage (raw, temperature, top-k,
// top-p), Step / Generate N, beam search and the KV-cache measurement.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"

namespace tscope::gui {

// What the last Step / Generate drew, and the top tokens of the snapshot on screen.
struct SamplingView {
  uint64_t builtFor = 0;
  std::vector<int> topIds;          // most probable tokens by raw probability, best first
  std::vector<int> keptCounts;      // (4) tokens with non-zero probability at each stage
  int generateCount = 16;           // N for Generate
  bool awaitingGeneration = false;  // a Step / Generate was posted and the session is still on it
  uint64_t takenGeneration = 0;     // the snapshot whose generated text the prompt took
  int lastToken = -1;               // the newest token drawn and its probability when drawn (NaN: unknown)
  float lastTokenProb = 0;
  bool lastWasGreedy = false;
  int streamTokens = 0;  // tokens drawn so far in that random stream
  uint64_t streamSeed = 0;
  std::string lastStop;     // why the last generation made fewer tokens than asked
  bool sharedScale = true;  // one probability scale for every stage
};

class SamplingPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  // When `s` holds a finished Step / Generate for the prompt on screen: the prompt takes the new
  // text and its generated ids (once per snapshot). Returns the line for the status bar ("" none).
  std::string takeGeneratedText(AppState& state, const Snapshot& s);
  std::string onSnapshot(AppState& state, const Snapshot& s) override { return takeGeneratedText(state, s); }

 private:
  SamplingView view_;
};

}  // namespace tscope::gui
