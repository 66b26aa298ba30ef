// The layer and head sliders of the panels that show one head of one layer (Attention, Inside the
// block, Translation, Efficient attention, the Training panel's head; the Experts panel's layer): the same widths, flow and clamping everywhere,
// each slider recorded as a screen region for the GUI tests when the panel names one.
#pragma once
#include <string>

#include "app/gui/panels/panels.h"

namespace tscope::gui {

struct LayerHeadPicker {
  const char* layerLabel = "layer";
  const char* headLabel = "head";
  const char* region = nullptr;  // "inside" records inside_layer and inside_head; null records none
  float widthEms = 8;            // each slider's width in font sizes
  bool headDisabled = false;     // e.g. the mean over heads is shown
};

// `shared` (may be null) receives the regions. Draws both sliders on one line when they fit (values clamped to 0..layers-1 and 0..heads-1);
// true when either changed.
bool layerHeadSliders(SharedView* shared, const LayerHeadPicker& picker, int& layer, int layers, int& head, int heads);
// The layer slider alone (the Experts panel: routing is per layer); the first half of the above.
bool layerSlider(SharedView* shared, const LayerHeadPicker& picker, int& layer, int layers);

}  // namespace tscope::gui
