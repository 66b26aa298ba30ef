// Images as a Vision Transformer's input: PNG / JPEG / BMP / PNM files decoded by stb_image
// (size checked from the header before any pixel is decoded), grey and RGB conversions, PIL-style
// bilinear resizing, and HuggingFace's ViTImageProcessor pipeline (resize, rescale, normalise)
// read from a preprocessor_config.json, giving pixel_values in PyTorch's channel-major order.
// writePng saves an image (the tests' files, a digit drawn in the app).
#pragma once
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tscope {

// A decoded image: `pixels` holds height x width x channels floats, row-major (row 0 is the top
// row, each pixel's channels together), every value in [0, 1]. channels is 1 (grey) or 3 (RGB);
// an alpha channel never survives decoding (it is composited over white).
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<float> pixels;

  float at(int y, int x, int c) const { return pixels[(static_cast<size_t>(y) * width + x) * channels + c]; }
};

// The largest image decodeImage accepts: 8192 pixels on a side and 40 megapixels in all.
inline constexpr int kMaxImageSide = 8192;
inline constexpr int64_t kMaxImagePixels = 40'000'000;
// The largest image file readImage reads.
inline constexpr int64_t kMaxImageFileBytes = int64_t{256} << 20;

// Decodes a PNG (8 or 16 bits a channel), JPEG, BMP or PNM image held in memory. Grey stays one
// channel, grey + alpha becomes grey, RGB and RGBA become RGB (alpha composited over white).
// Throws tscope::Error "NAME: ..." (one line) for empty data, data that is no such image or is
// cut short, and images over kMaxImageSide on a side or kMaxImagePixels, the last refused from the
// header alone.
Image decodeImage(const uint8_t* data, size_t size, const std::string& name);

// Reads the image file at `path` (at most kMaxImageFileBytes) and decodes it; errors name the path.
Image readImage(const std::string& path);

// The image as one grey channel, ITU-R BT.601 luma 0.299 R + 0.587 G + 0.114 B (grey: a copy).
Image toGrey(const Image& image);
// The image as three RGB channels, grey repeated in each (RGB: a copy).
Image toRgb(const Image& image);

// The image resized to width x height (each 1..16384) by PIL's BILINEAR resample, the one
// HuggingFace's ViTImageProcessor uses: a triangle filter whose support widens by the scale factor
// when shrinking (so a shrink averages, antialiased), separable (horizontal pass, then vertical),
// weights normalised for each output pixel, output pixel i centred at input (i + 0.5) * scale. An
// axis whose size is unchanged is copied. Unlike PIL, which works on 8-bit values and rounds after
// each pass, this stays in floating point (a difference of at most about one 8-bit level).
Image resizeImage(const Image& in, int width, int height);

// How an image becomes a model's input (HuggingFace's preprocessor_config.json, plus tscope's own
// fields). The pipeline's raw pixel values are those an 8-bit image has, 0..255 (what HuggingFace's
// processor sees in a PIL image), or 0..levels when levels > 0.
struct ImagePreprocessing {
  bool doResize = true;                      // resize to width x height (else the image must be that size)
  int width = 224, height = 224;             // the model's input size, 1..4096
  bool doRescale = true;                     // multiply the raw values by rescaleFactor
  double rescaleFactor = 1.0 / 255;          // 1 / 255 for 8-bit values; 1 / levels with levels
  bool doNormalize = true;                   // (value - mean) / stdev per channel
  std::vector<double> mean{0.5, 0.5, 0.5};   // 1 value (every channel) or one per channel
  std::vector<double> stdev{0.5, 0.5, 0.5};  // likewise; each positive
  // > 0 (tscope's digits model: 16): each value (after resizing) becomes round(v * levels), a count
  // 0..levels as in the UCI digits, whose features count the inked pixels of a 4x4 block; set
  // rescaleFactor to 1 / levels with it.
  int levels = 0;
  // The digits are bright ink on black: an image whose border pixels average above 0.5 (a dark
  // digit photographed on white paper) is inverted (v -> 1 - v) before resizing.
  bool invertWhenLight = false;
};

// Reads HuggingFace's preprocessor_config.json (as parsed JSON): do_resize, size ({"height": h,
// "width": w}, {"shortest_edge": n} or a bare n: n x n), do_rescale, rescale_factor, do_normalize,
// image_mean, image_std (a number or a list of 1 or 3 numbers), and tscope's tscope_levels and
// tscope_invert_when_light (tscope_levels without rescale_factor sets it to 1 / levels). Missing
// fields keep ImagePreprocessing's defaults; unknown ones are ignored. A field of the wrong kind or
// value throws tscope::Error "NAME: field 'KEY' ..." (one line).
ImagePreprocessing parsePreprocessorConfig(const nlohmann::json& j, const std::string& name);
// The preprocessor_config.json of `p` ("image_processor_type": "ViTImageProcessor"), which
// parsePreprocessorConfig reads back to `p`.
nlohmann::json preprocessorConfigJson(const ImagePreprocessing& p);

// The model input of `image` under `p`: converted to `channels` (1: grey, 3: RGB), inverted when
// p.invertWhenLight says, resized to p.width x p.height (doResize; otherwise the image must have that
// size), quantised to levels, rescaled and normalised, returned channel-major (channels, height,
// width) as PyTorch's pixel_values. Throws tscope::Error for an empty image, a size mismatch without
// doResize, or a mean / stdev list that does not fit `channels`.
std::vector<float> preprocessImage(const Image& image, const ImagePreprocessing& p, int channels);

// Writes `image` (1 or 3 channels) as an 8-bit PNG: to PATH.tmp, then renamed to `path`. Throws
// tscope::Error "PATH: ..." when it cannot.
void writePng(const std::string& path, const Image& image);

}  // namespace tscope
