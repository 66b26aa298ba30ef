// Fuzzes the image reader on whole files held in memory (PNG, JPEG, BMP, PNM through stb_image):
// whatever decodeImage accepts must be a grey or RGB image within the size limits with every value
// in [0, 1], and must preprocess, as tscope's digits model does (8x8 grey counts 0..16, inverted
// when light) and as a ViT does (16x16 RGB, rescaled and normalised), to finite numbers in range.
#include <cmath>
#include <vector>

#include "fuzz_check.h"
#include "model/core/error.h"
#include "model/io/image.h"

using namespace tscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Image image;
  try {
    image = decodeImage(data, size, "fuzz.png");
  } catch (const Error&) {
    return 0;  // refused with a message: what a bad file must get
  }
  FUZZ_CHECK(image.channels == 1 || image.channels == 3, "channels " + std::to_string(image.channels));
  FUZZ_CHECK(image.width > 0 && image.height > 0 && image.width <= kMaxImageSide && image.height <= kMaxImageSide, "size out of the limits");
  FUZZ_CHECK(int64_t{image.width} * image.height <= kMaxImagePixels, "more pixels than the limit");
  FUZZ_CHECK(image.pixels.size() == static_cast<size_t>(image.width) * image.height * image.channels, "pixel count");
  for (float v : image.pixels) FUZZ_CHECK(v >= 0.0f && v <= 1.0f, "a value outside [0, 1]: " + std::to_string(v));

  ImagePreprocessing digits;
  digits.width = digits.height = 8;
  digits.levels = 16;
  digits.rescaleFactor = 1.0 / 16;
  digits.doNormalize = false;
  digits.invertWhenLight = true;
  const std::vector<float> counts = preprocessImage(image, digits, 1);
  FUZZ_CHECK(counts.size() == 64, "digits input size");
  for (float v : counts) FUZZ_CHECK(v >= 0.0f && v <= 1.0f && v * 16 == std::round(v * 16), "a digits value off the 1/16 grid: " + std::to_string(v));

  ImagePreprocessing vit;
  vit.width = vit.height = 16;
  const std::vector<float> rgb = preprocessImage(image, vit, 3);
  FUZZ_CHECK(rgb.size() == 3 * 16 * 16, "ViT input size");
  for (float v : rgb) FUZZ_CHECK(v >= -1.0f - 1e-5f && v <= 1.0f + 1e-5f, "a normalised value outside [-1, 1]: " + std::to_string(v));
  return 0;
}
