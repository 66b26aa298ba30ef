// The prompt box and token strip above every tab (TokenStrip), and the Prompt & tokens panel:
// the prompt's tokens with ids and bytes, and the tokenizer's merge steps for the selected word.
#pragma once
#include <cstdint>

#include "app/gui/panels/panels.h"

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
};

}  // namespace tscope::gui
