// Vision: an image is a sequence of patches (the lecture's "tokenize the image by cutting it into
// patches", ViT; docs/VISION.md). For digits-vit an 8x8 canvas the lecturer draws on with the mouse
// (brush, eraser, clear, a test image, noise, a shift by a pixel), the class probabilities live as
// the strokes land; for a ViT checkpoint a picture opened from a path or a sample photograph. Over
// the image: the patch grid and the attention of the chosen layer and head from [CLS] (or from any
// patch clicked), or its rollout across layers; patches masked by clicking them, with the classes
// before and after. Beside it the chosen patch's pixels and embedding, the learned positions'
// similarity grid (the ViT paper's Figure 7) and the patch-embedding filters.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/session/vision_input.h"

namespace tscope::gui {

class VisionPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

  // What a click on the image does.
  enum class ClickMode { Draw, Mask, Look };

 private:
  void drawNotAnImageModel(PanelContext& ctx);
  void drawInputControls(PanelContext& ctx);
  void drawPictureControls(PanelContext& ctx);
  // The image with its patch grid and the attention overlay, `side` pixels square; mouse input.
  void drawImage(PanelContext& ctx, const Snapshot* s, float side);
  void handleImageMouse(PanelContext& ctx, ImVec2 origin, float side);
  void drawPredictions(PanelContext& ctx, const Snapshot& s);
  void drawPatchDetail(PanelContext& ctx);
  void drawPositions(PanelContext& ctx);
  void drawFilters(PanelContext& ctx);
  // The attention over the patches (P) the overlay shows: the query's row of the layer's map (the
  // head's, or their mean), or of the rollout; empty with a reason in `why` when it cannot be had.
  std::vector<float> overlay(const Snapshot& s, int layer, int head, std::string& why) const;
  void postCanvas(PanelContext& ctx);
  void postPicture(PanelContext& ctx, const std::string& path);
  void describe(PanelContext& ctx, const Snapshot* s, const std::vector<float>& shown);

  session::DigitCanvas canvas_;
  ClickMode click_ = ClickMode::Draw;
  bool rollout_ = false;
  bool averageHeads_ = false;
  int query_ = 0;       // 0 = [CLS], 1..P = patch query_ - 1
  int testIndex_ = 0;   // the digits' test image the "test image" buttons show
  int testLabel_ = -1;  // its label (-1: drawn, not a test image)
  int noiseSeed_ = 1;
  int hovered_ = -1;      // the patch under the mouse (0-based; -1 none)
  int strokePixel_ = -1;  // the canvas pixel the stroke being drawn last painted (-1: no stroke)
  std::string picturePath_;
  char pathInput_[1024] = "";
  std::string pictureError_;
  // Per model (Session::serial): the position similarity grid and the filters, from the weights.
  uint64_t viewsFor_ = 0;
  std::vector<float> similarity_, filters_;
  std::string viewsNote_;
};

}  // namespace tscope::gui
