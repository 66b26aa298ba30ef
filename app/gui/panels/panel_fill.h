// Fill in the blank: a masked language model (BERT's objective; brown-bert) reads a whole sentence
// and says what belongs behind each [MASK]. Click a word to hide it (again to bring it back), click a
// prediction to put it in; the attention of one head with no causal mask, which a toggle greys as a
// causal model would have it, and [CLS]'s row; another puts the same sentence through brown-small (a
// GPT-style model, in a second session) beside it, so the two maps show what each token can see.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "app/gui/panels/compare/compare_right.h"
#include "app/gui/panels/panels.h"
#include "app/gui/widgets/token_heatmap.h"

namespace tscope::gui {

// One attention map of the panel (the open model's, or brown-small's beside it): rebuilt when the
// snapshot, layer or head changes, drawn square in the space left.
struct FillMap {
  TokenHeatmap map;
  uint64_t builtFor = 0;
  int builtLayer = -1, builtHead = -1;
  std::vector<std::string> labels;  // (T) token labels
  std::vector<float> shown;         // (T, T) the head's weights, NaN where masked
  void update(PanelContext& ctx, const Snapshot& s, const Snapshot::LayerMaps& maps, const ModelConfig& c, int layer, int head);
  // `readout` gives the hover line of a cell; selectedRow outlined (-1: none).
  TokenHeatmapHit draw(PanelContext& ctx, const char* region, int selectedRow, std::function<std::string(int, int)> readout);
  std::string looksAt(int row, int col) const;  // "'a' looks at 'b': 0.123"
  // Greys the keys after each query of a drawn T x T map: what a causal model cannot see.
  static void greyFuture(const TokenHeatmapHit& hit, int T);
};

class FillPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;
  bool busy() const override { return throughGpt_ && gpt_.busy(); }

 private:
  void drawSegments(PanelContext& ctx, const Snapshot& s);
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
  FillMap bert_;             // brown-bert's map (the open model's)
  bool throughGpt_ = false;  // the same sentence through brown-small beside the map
  CompareRight gpt_;         // brown-small's session, loaded when the toggle is first ticked
  FillMap gptMap_;           // its map of the same layer and head
};

}  // namespace tscope::gui
