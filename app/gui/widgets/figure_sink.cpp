// The frame's vector figures (figure_sink.h).
#include "app/gui/widgets/figure_sink.h"

#include <algorithm>

namespace tscope::gui {

namespace {
// The UI thread's open sink (the App draws on one thread).
std::vector<VectorFigure>* open = nullptr;
}  // namespace

FigureSinkScope::FigureSinkScope(std::vector<VectorFigure>& figures) : previous_(open) { open = &figures; }

FigureSinkScope::~FigureSinkScope() { open = previous_; }

bool figureSinkOpen() { return open != nullptr; }

void addFigure(std::string name, std::function<std::string()> svg) {
  if (!open) return;
  auto taken = [&](const std::string& n) { return std::any_of(open->begin(), open->end(), [&](const VectorFigure& f) { return f.name == n; }); };
  if (name.empty()) name = "figure";
  std::string unique = name;
  for (int k = 2; taken(unique); ++k) unique = name + "_" + std::to_string(k);
  open->push_back({std::move(unique), std::move(svg)});
}

}  // namespace tscope::gui
