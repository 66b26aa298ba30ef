// The Vision panel's input (docs/VISION.md), without GL: the digit canvas a lecturer draws on, the
// sample photographs the set-up unpacks, and the picture an image model starts with.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/core/config.h"
#include "model/io/image.h"

namespace tscope::session {

// An 8x8 canvas of ink in [0, 1] (1 = the data set's 16 of 16), as digits-vit reads it: a brush adds
// 12/16 of ink to the pixel under it and 2/16 to the four beside it (a pen's stroke in the UCI data is
// one or two pixels wide), the eraser takes twice that away; every value stays a multiple of 1/16,
// the data set's levels.
struct DigitCanvas {
  static constexpr int kSide = 8;
  std::vector<float> ink = std::vector<float>(kSide * kSide, 0.0f);  // (8, 8) row by row
  // The brush (or eraser) once at canvas position (x, y) in pixels (fractions allowed, the cursor's
  // place); a stroke applies it once per pixel it enters.
  void brush(float x, float y, bool erase);
  void clear() { std::fill(ink.begin(), ink.end(), 0.0f); }
  // Each pixel moved by up to `amount` (in [0, 1]) at random, kept in [0, 1] and on the 16 levels.
  void addNoise(double amount, uint64_t seed);
  // The ink moved by (dx, dy) pixels; what leaves the canvas is lost.
  void shift(int dx, int dy);
};

// The sample photographs the set-up unpacks from python3-skimage (.cache/data/images), sorted by
// name; empty when none is there.
std::vector<std::string> sampleImages();

// The picture an image model starts with, as its input (imageFloats()): for an 8x8 one-channel model
// the digits' test image `digit` when they are installed, else for any model the first sample
// photograph through `preprocessing`, else a blank image.
std::vector<float> defaultImage(const ModelConfig& config, const ImagePreprocessing& preprocessing, int digit = 0);

// A digits test image as a canvas (false when the digits are not installed or the index is outside
// the test split), and its label in `label`.
bool digitTestImage(int index, DigitCanvas& canvas, int* label = nullptr);
int digitTestImages();  // how many (0: not installed)

// The model input back as displayable pixels in [0, 1] (channels, size, size): normalisation undone.
std::vector<float> displayPixels(const std::vector<float>& input, const ImagePreprocessing& preprocessing, int channels);

}  // namespace tscope::session
