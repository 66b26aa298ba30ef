// The Architecture panel's "Three families" view (issue #33): brown-small (GPT), brown-bert (BERT)
// and dates-encdec (T5) side by side, each run live on the lecture's example (three_families.h, on a
// background thread when the view opens), with its attention mask drawn as a grid and its objective.
#pragma once
#include <future>
#include <optional>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/session/three_families.h"

namespace tscope::gui {

class ThreeFamiliesView {
 public:
  void draw(PanelContext& ctx);
  bool busy() const { return pending_.valid(); }

 private:
  std::future<std::vector<session::FamilyExample>> pending_;
  std::optional<std::vector<session::FamilyExample>> examples_;
};

}  // namespace tscope::gui
