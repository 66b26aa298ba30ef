// Fill in the blank: a masked language model (BERT's objective; brown-bert) reads a whole sentence
// and says what belongs behind each [MASK]. Click a word to hide it (again to bring it back), click a
// prediction to put it in; the attention of one head with no causal mask, which a toggle greys as a
// causal model would have it, and [CLS]'s row.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/token_heatmap.h"

namespace tscope::gui {

class FillPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  void drawSentence(PanelContext& ctx, const Snapshot& s);
  void drawFills(PanelContext& ctx, const Snapshot& s);
  void drawAttention(PanelContext& ctx, const Snapshot& s);
  // Writes `ids` (the snapshot's, edited) back as the prompt and asks for a new forward.
  void setPrompt(PanelContext& ctx, const std::vector<int>& ids);

  // The tokens a click hid, to give back on the next click: position -> id, valid while the prompt
  // is still `hiddenIn` (any other edit forgets them; a blank with no remembered token takes the
  // model's first choice).
  std::map<int, int> hidden_;
  std::string hiddenIn_;
  bool causalView_ = false;  // grey the keys after each query, as a causal model could not see them
  TokenHeatmap map_;
  uint64_t builtFor_ = 0;
  int builtLayer_ = -1, builtHead_ = -1;
  std::vector<std::string> labels_;
  std::vector<float> shown_;
};

}  // namespace tscope::gui
