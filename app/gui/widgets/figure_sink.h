// Where the widgets drawn this frame leave their vector figures for Export SVG: every Plot, column
// chart and labelled TokenHeatmap of the panel on screen adds one (a name and how to write its SVG,
// called in the same frame after the panel drew, if the user asked). The App opens the sink on its
// frame's list while the panel draws (FigureSinkScope); outside it, adding is a no-op.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace tscope::gui {

struct VectorFigure {
  std::string name;                  // unique in the frame: a repeated name gets "_2", "_3", ...
  std::function<std::string()> svg;  // the SVG document
};

class FigureSinkScope {
 public:
  explicit FigureSinkScope(std::vector<VectorFigure>& figures);
  ~FigureSinkScope();
  FigureSinkScope(const FigureSinkScope&) = delete;
  FigureSinkScope& operator=(const FigureSinkScope&) = delete;

 private:
  std::vector<VectorFigure>* previous_;
};

bool figureSinkOpen();  // a widget may skip building its figure when nobody collects it
void addFigure(std::string name, std::function<std::string()> svg);

}  // namespace tscope::gui
