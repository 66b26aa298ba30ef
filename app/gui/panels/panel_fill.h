// Fill in the blank: a masked language model (BERT's objective; brown-bert) reads a whole sentence
// and says what belongs behind each [MASK]. Click a word to hide it (again to bring it back), click a
// prediction to put it in; the attention of one head with no causal mask, which a toggle greys as a
// causal model would have it, and [CLS]'s row; another puts the same sentence through brown-small (a
// GPT-style model, in a second session) beside it, so the two maps show what each token can see.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "app/gui/panels/compare/compare_right.h"
#include "app/gui/panels/panels.h"
#include "app/gui/widgets/token_heatmap.h"

namespace tscope::gui {

class FillPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  bool busy() const override { return throughGpt_ && gpt_.busy(); }

 private:
  void drawSentence(PanelContext& ctx, const Snapshot& s);
  void drawFills(PanelContext& ctx, const Snapshot& s);
  void drawAttention(PanelContext& ctx, const Snapshot& s);
  void drawBertMap(PanelContext& ctx, const Snapshot& s);
  // brown-small's map of the same layer and head on the same sentence (blanks as "_"), its future greyed.
  void drawThroughGpt(PanelContext& ctx);
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
  bool throughGpt_ = false;  // the same sentence through brown-small beside the map
  CompareRight gpt_;         // brown-small's session, loaded when the toggle is first ticked
  TokenHeatmap gptMap_;
  uint64_t gptBuiltFor_ = 0;
  int gptBuiltLayer_ = -1, gptBuiltHead_ = -1;
  std::vector<std::string> gptLabels_;
  std::vector<float> gptShown_;
};

}  // namespace tscope::gui
