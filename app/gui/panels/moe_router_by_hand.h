// The Experts panel's router by hand: router logits typed in (the lecture's worked example by
// default), routed by the same routeTokens the model's MoE layers run, so a lecturer can show the
// slide's own numbers: the softmax over all experts, the top k, the renormalised gates, the capacity
// and what it drops.
#pragma once
#include <string>

#include "app/gui/panels/panels.h"

namespace tscope::gui {

struct RouterByHand {
  // The Advanced Transformers lecture's router slide: logits = W_g x for one token over 8 experts.
  std::string text = "2.1, 0.3, 1.8, 0.1, 3.2, 0.5, 1.1, 0.8";
  int topK = 2;
  float capacityFactor = 0;  // <= 0: no limit
};

// Draws the typed logits' routing inside a collapsing header; facts under "router_by_hand".
void drawRouterByHand(PanelContext& ctx, RouterByHand& r);

}  // namespace tscope::gui
