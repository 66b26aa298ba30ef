// The Vision panel (see panel_vision.h): the image and its patches, drawn with ImDrawList. The
// numbers are the snapshot's (the session runs the image through the model: session_vision.cpp) and
// model/nn/vision_views.h's (rollout, position similarity, filters, top classes), which
// `tscope-cli classify --dump` writes too.
#include "app/gui/panels/vision/panel_vision.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "app/gui/widgets/layer_head_picker.h"
#include "model/nn/vision_views.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kGridColor = IM_COL32(120, 120, 120, 160);
constexpr ImU32 kMaskedColor = IM_COL32(240, 140, 40, 255);
constexpr ImU32 kQueryColor = IM_COL32(80, 200, 255, 255);

std::string shippedDigits() { return (std::filesystem::path(TSCOPE_SOURCE_DIR) / "assets/models/digits-vit").string(); }

bool isDigitModel(const ModelConfig& c) { return c.image_size == session::DigitCanvas::kSide && c.num_channels == 1; }

// The colour of a pixel value v in [0, 1] (grey) or of an RGB triple.
ImU32 grey(float v) {
  const int g = static_cast<int>(std::clamp(v, 0.0f, 1.0f) * 255);
  return IM_COL32(g, g, g, 255);
}

}  // namespace

void VisionPanel::drawNotAnImageModel(PanelContext& ctx) {
  ImGui::TextWrapped(
      "This is a text model: its tokens are pieces of words. An image model cuts a picture into patches and reads each "
      "patch as a token (the Vision Transformer: \"anything you can tokenize, you can feed to a Transformer\").");
  ctx.shared.facts["vision"] = {{"image_model", false}};
  ctx.shared.exportNote = "this is a text model: the Vision panel shows image models";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(shippedDigits()) / "config.json", ec)) return;
  if (ImGui::Button("Open digits-vit (handwritten digits)")) ctx.openModel = shippedDigits();
  recordItem(ctx.shared, "vision_open_digits");
}

void VisionPanel::postCanvas(PanelContext& ctx) {
  ctx.state.image = canvas_.ink;
  ctx.state.digit = testLabel_ >= 0 ? testIndex_ : -1;  // a test image by its number (session files, lessons); else a drawing
  ctx.repost = true;
}

void VisionPanel::postPicture(PanelContext& ctx, const std::string& path) {
  try {
    const ModelConfig& c = ctx.session.config();
    ctx.state.image = preprocessImage(readImage(path), ctx.session.preprocessing(), c.num_channels);
    ctx.state.maskedPatches.clear();
    ctx.state.digit = -1;  // a picture, not a test image of the digits
    picturePath_ = path;
    pictureError_.clear();
    ctx.repost = true;
  } catch (const std::exception& e) {
    pictureError_ = e.what();     // one line; the picture before stays
    ctx.message = pictureError_;  // in the status bar too (the digits' canvas shows no path line)
  }
}

void VisionPanel::drawInputControls(PanelContext& ctx) {
  const ModelConfig& c = ctx.session.config();
  if (!ctx.chosenImage.empty()) {  // the file browser's picture: any model reads it through its preprocessing
    std::snprintf(pathInput_, sizeof pathInput_, "%s", ctx.chosenImage.c_str());
    postPicture(ctx, ctx.chosenImage);
  }
  if (!isDigitModel(c)) return drawPictureControls(ctx);
  // The canvas shows the state's picture: the app's first digit, a session's or a lesson step's.
  if (ctx.state.image.size() == canvas_.ink.size() && ctx.state.image != canvas_.ink) {
    canvas_.ink = ctx.state.image;
    testLabel_ = -1;
    session::DigitCanvas test;
    int label = -1;
    if (ctx.state.digit >= 0 && session::digitTestImage(ctx.state.digit, test, &label) && test.ink == canvas_.ink) {
      testIndex_ = ctx.state.digit;
      testLabel_ = label;
    }
  }
  ImGui::TextUnformatted("Draw a digit: left mouse paints, right mouse erases.");
  if (ImGui::Button("Clear")) {
    canvas_.clear();
    testLabel_ = -1;
    postCanvas(ctx);
  }
  recordItem(ctx.shared, "vision_clear");
  const int tests = session::digitTestImages();
  if (tests > 0) {
    ImGui::SameLine();
    if (ImGui::ArrowButton("##vision_prev", ImGuiDir_Left)) testIndex_ = (testIndex_ + tests - 1) % tests;
    recordItem(ctx.shared, "vision_test_prev");
    ImGui::SameLine();
    const bool pick = ImGui::Button(("Test image " + std::to_string(testIndex_)).c_str());
    recordItem(ctx.shared, "vision_test_image");
    ImGui::SameLine();
    const bool next = ImGui::ArrowButton("##vision_next", ImGuiDir_Right);
    recordItem(ctx.shared, "vision_test_next");
    if (next) testIndex_ = (testIndex_ + 1) % tests;
    if (pick || next || ImGui::IsItemDeactivated()) {
      if (session::digitTestImage(testIndex_, canvas_, &testLabel_)) postCanvas(ctx);
    }
  }
  ImGui::SameLine();
  if (ImGui::Button("Noise")) {
    canvas_.addNoise(0.25, static_cast<uint64_t>(noiseSeed_++));
    testLabel_ = -1;  // no longer the test image as the data set has it
    postCanvas(ctx);
  }
  recordItem(ctx.shared, "vision_noise");
  ImGui::SameLine();
  if (ImGui::Button("Picture...")) ctx.browseImage = true;  // a photo of a digit, read as the training digits were
  recordItem(ctx.shared, "vision_browse");
  const char* names[] = {"left", "right", "up", "down"};
  const int moves[4][2] = {{-1, 0}, {1, 0}, {0, -1}, {0, 1}};
  const ImGuiDir dirs[] = {ImGuiDir_Left, ImGuiDir_Right, ImGuiDir_Up, ImGuiDir_Down};
  ImGui::SameLine();
  ImGui::TextUnformatted("shift:");
  for (int i = 0; i < 4; ++i) {
    ImGui::SameLine();
    if (ImGui::ArrowButton((std::string("##vision_shift_") + names[i]).c_str(), dirs[i])) {
      canvas_.shift(moves[i][0], moves[i][1]);
      testLabel_ = -1;
      postCanvas(ctx);
    }
    recordItem(ctx.shared, std::string("vision_shift_") + names[i]);
  }
  if (testLabel_ >= 0) ImGui::TextDisabled("test image %d of the digits' held-out split: a %d", testIndex_, testLabel_);
  else ImGui::TextDisabled("your drawing (the model saw none like it in training)");
}

void VisionPanel::drawPictureControls(PanelContext& ctx) {
  ImGui::TextWrapped("A picture, resized to %d x %d as the model's preprocessor_config.json says.", ctx.session.config().image_size,
                     ctx.session.config().image_size);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 22);
  const bool entered = ImGui::InputText("##vision_path", pathInput_, sizeof pathInput_, ImGuiInputTextFlags_EnterReturnsTrue);
  recordItem(ctx.shared, "vision_path");
  ImGui::SameLine();
  if (ImGui::Button("Open picture") || entered) postPicture(ctx, pathInput_);
  recordItem(ctx.shared, "vision_open_picture");
  ImGui::SameLine();
  if (ImGui::Button("Browse...")) ctx.browseImage = true;
  recordItem(ctx.shared, "vision_browse");
  const std::vector<std::string> samples = session::sampleImages();
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i > 0) ImGui::SameLine();
    const std::string name = std::filesystem::path(samples[i]).stem().string();
    if (ImGui::SmallButton(name.c_str())) postPicture(ctx, samples[i]);
    recordItem(ctx.shared, "vision_sample_" + std::to_string(i));
  }
  if (!pictureError_.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", pictureError_.c_str());
  else if (!picturePath_.empty()) ImGui::TextDisabled("%s", picturePath_.c_str());
}

std::vector<float> VisionPanel::overlay(const Snapshot& s, int layer, int head, std::string& why) const {
  const int T = static_cast<int>(s.ids.size());
  if (T < 2) return {};
  // The head's map, or the heads' mean, of one layer (T, T).
  auto layerMap = [&](int l, bool mean) -> std::vector<float> {
    const std::optional<Snapshot::LayerMaps> m = s.maps(l);
    if (!m) {
      why = s.mapsMissing(l);
      return {};
    }
    if (!mean) return m->rows->map(m->index, head, false);
    std::vector<float> sum((size_t)T * T, 0.0f);
    const int H = m->rows->heads();
    for (int h = 0; h < H; ++h) {
      const std::vector<float> one = m->rows->map(m->index, h, false);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += one[i] / H;
    }
    return sum;
  };
  std::vector<float> map;
  if (rollout_) {
    std::vector<std::vector<float>> maps;
    for (int l = 0; l < s.trace.L; ++l) {
      std::vector<float> one = layerMap(l, true);
      if (one.empty()) return {};
      maps.push_back(std::move(one));
    }
    map = attentionRollout(maps, 1, T);
  } else {
    map = layerMap(layer, averageHeads_);
    if (map.empty()) return {};
  }
  const int q = std::clamp(query_, 0, T - 1);
  return std::vector<float>(map.begin() + (size_t)q * T + 1, map.begin() + (size_t)(q + 1) * T);  // the patches' columns
}

void VisionPanel::handleImageMouse(PanelContext& ctx, ImVec2 origin, float side) {
  const ModelConfig& c = ctx.session.config();
  const int G = c.patchGrid();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float u = (mouse.x - origin.x) / side, v = (mouse.y - origin.y) / side;
  const bool inside = u >= 0 && u < 1 && v >= 0 && v < 1;
  hovered_ = inside ? static_cast<int>(v * G) * G + static_cast<int>(u * G) : -1;
  const bool left = ImGui::IsItemActive() && ImGui::IsMouseDown(ImGuiMouseButton_Left);
  const bool right = ImGui::IsItemHovered() && ImGui::IsMouseDown(ImGuiMouseButton_Right);
  if (click_ == ClickMode::Draw && isDigitModel(c)) {
    const int side8 = session::DigitCanvas::kSide;
    const int pixel = inside ? static_cast<int>(v * side8) * side8 + static_cast<int>(u * side8) : -1;
    if (!(left || right)) strokePixel_ = -1;
    else if (inside && pixel != strokePixel_) {  // once per pixel the stroke enters, however long it rests there
      strokePixel_ = pixel;
      canvas_.brush(u * side8, v * side8, right);
      testLabel_ = -1;
      postCanvas(ctx);  // the worker keeps only the newest: the classes follow the stroke
    }
    return;
  }
  if (!ImGui::IsItemClicked(ImGuiMouseButton_Left) || hovered_ < 0) return;
  if (click_ == ClickMode::Mask) {
    std::vector<int>& masked = ctx.state.maskedPatches;
    const auto at = std::find(masked.begin(), masked.end(), hovered_);
    if (at == masked.end()) masked.push_back(hovered_);
    else masked.erase(at);
    ctx.repost = true;
  } else {
    query_ = query_ == hovered_ + 1 ? 0 : hovered_ + 1;  // clicking the query again goes back to [CLS]
  }
}

void VisionPanel::drawImage(PanelContext& ctx, const Snapshot* s, float side) {
  const ModelConfig& c = ctx.session.config();
  const int S = c.image_size, G = c.patchGrid(), channels = c.num_channels;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##vision_image", ImVec2(side, side), ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  recordItem(ctx.shared, "vision_image");
  handleImageMouse(ctx, origin, side);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  // The picture at most 64 x 64 cells (a 224 x 224 photograph averaged in blocks; a digit as it is).
  const std::vector<float> pixels = session::displayPixels(ctx.state.image, ctx.session.preprocessing(), channels);
  if (pixels.size() == (size_t)c.imageFloats()) {
    const int cells = std::min(S, 64), block = (S + cells - 1) / cells;
    const float cell = side / cells;
    for (int y = 0; y < cells; ++y)
      for (int x = 0; x < cells; ++x) {
        float rgb[3] = {0, 0, 0};
        int n = 0;
        for (int yy = y * block; yy < std::min(S, (y + 1) * block); ++yy)
          for (int xx = x * block; xx < std::min(S, (x + 1) * block); ++xx, ++n)
            for (int ch = 0; ch < 3; ++ch) rgb[ch] += pixels[((size_t)std::min(ch, channels - 1) * S + yy) * S + xx];
        const ImU32 color =
            channels == 1 ? grey(rgb[0] / std::max(1, n))
                          : IM_COL32(static_cast<int>(255 * rgb[0] / n), static_cast<int>(255 * rgb[1] / n), static_cast<int>(255 * rgb[2] / n), 255);
        draw->AddRectFilled(ImVec2(origin.x + x * cell, origin.y + y * cell), ImVec2(origin.x + (x + 1) * cell, origin.y + (y + 1) * cell), color);
      }
  }
  const float patch = side / G;
  std::string why;
  const std::vector<float> shown = s ? overlay(*s, ctx.state.layer, ctx.state.head, why) : std::vector<float>{};
  const float top = shown.empty() ? 0.0f : *std::max_element(shown.begin(), shown.end());
  for (int i = 0; i < G * G; ++i) {
    const int row = i / G, column = i % G;  // the patch's place on the grid
    const ImVec2 a(origin.x + column * patch, origin.y + row * patch), b(a.x + patch, a.y + patch);
    if (!shown.empty() && top > 0) {  // the attention as a warm veil: the brightest patch most opaque
      const float t = shown[i] / top;
      draw->AddRectFilled(a, b, IM_COL32(255, 60, 30, static_cast<int>(170 * t)));
    }
    const bool masked = std::find(ctx.state.maskedPatches.begin(), ctx.state.maskedPatches.end(), i) != ctx.state.maskedPatches.end();
    if (masked) {
      draw->AddRectFilled(a, b, IM_COL32(40, 40, 40, 200));
      draw->AddLine(a, b, kMaskedColor, 2.0f);
    }
    draw->AddRect(a, b, masked ? kMaskedColor : kGridColor);
    if (query_ == i + 1) draw->AddRect(a, b, kQueryColor, 0.0f, 0, 3.0f);
  }
  if (query_ == 0) draw->AddRect(origin, ImVec2(origin.x + side, origin.y + side), kQueryColor, 0.0f, 0, 2.0f);
  if (!why.empty()) ImGui::TextDisabled("%s", why.c_str());
  describe(ctx, s, shown);
}

std::unique_ptr<Panel> makeVisionPanel() { return std::make_unique<VisionPanel>(); }

}  // namespace tscope::gui
