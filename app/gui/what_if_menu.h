// The toolbar's "What if" menu (model/nn/what_if.h): one click takes a piece out of the live model
// (the causal mask, the positions, the 1/sqrt(d) scaling, a layer's softmax, residual or MLP, the
// final norm, the token order); every panel then shows the changed forward and the status bar
// names what is off, in the interventions' colour, so a lecturer cannot forget it.
#pragma once
#include <array>
#include <string>

#include "app/gui/panels/panels.h"

namespace tscope::gui {

// The menu's own state: the layer each layer what-if uses when it is turned on, and the seed.
struct WhatIfMenu {
  std::array<int, std::size(kWhatIfKinds)> layer{};
  int seed = 1;
};

// Draws the "What if" button and its popup; edits `whatIfs`. Returns whether they changed (the
// caller posts the request). `id` names the button's popup and prefixes its regions ("what_if":
// what_if, what_if_no-causal-mask, ..., what_if_clear).
bool drawWhatIfMenu(WhatIfMenu& menu, WhatIfs& whatIfs, const ModelConfig& config, SharedView& shared, const std::string& id = "what_if");

// The status bar's line while any what-if is on ("" otherwise): what is off and, for the shuffle,
// the order the model reads the tokens in (from the snapshot, when it has one).
std::string whatIfsLine(const AppState& state, const Snapshot* snapshot);

}  // namespace tscope::gui
