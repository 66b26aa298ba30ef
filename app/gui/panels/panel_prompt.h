// The prompt box and token strip above every tab (TokenStrip), and the Prompt & tokens panel:
// the prompt's tokens with ids and bytes, and the tokenizer's merge steps for the selected word.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "model/tokenize/tokenizer.h"

namespace tscope::gui {

// The prompt box and the wrapped strip of token chips (click one to select it).
class TokenStrip {
 public:
  void draw(PanelContext& ctx);

 private:
  float contentHeight_ = 0;   // height the strip's contents took last frame
  uint64_t scrolledFor_ = 0;  // the snapshot the strip last scrolled to the end for
};

class PromptPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

  // The merge steps of the word holding the selected token, worked out on the "prompt merges" task
  // channel (the pre-tokenizer runs over the whole prompt, and BPE's steps grow with the word).
  struct MergeKey {
    uint64_t session = 0, snapshot = 0;  // Session::serial (the channel outlives a model switch), Snapshot::id
    int position = -1;                   // the selected token
    bool operator==(const MergeKey&) const = default;
  };
  struct Merges {
    MergeKey key;
    std::string word;
    std::vector<BpeStep> steps;
    std::string note;  // why there are no steps ("" when there are)
  };
  // On the task thread: the word at `position` of `snapshot`'s prompt and its merge steps.
  static Merges mergesOf(const MergeKey& key, const Snapshot& snapshot, const Tokenizer& tokenizer);
  static constexpr size_t kMaxMergedWordBytes = 1024;  // a longer "word" (a pasted run with no spaces) is not stepped through

 private:
  void drawTokenTable(PanelContext& ctx);
  void drawMerges(PanelContext& ctx);
  MergeKey postedMerges_;
};

}  // namespace tscope::gui
