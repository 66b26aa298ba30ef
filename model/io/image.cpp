// Images in: grey / RGB conversion, PIL-style
// bilinear resizing, and HuggingFace's ViTImageProcessor steps (see image.h).
#include "model/io/image.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "model/core/error.h"
#include "model/core/file_check.h"
#include "model/core/json_field.h"

namespace tscope {

namespace {

std::string sizeText(int64_t width, int64_t height) { return std::to_string(width) + "x" + std::to_string(height); }

void requireChannels(const Image& image, const char* what) {
  if (image.channels != 1 && image.channels != 3)
    throw Error(std::string(what) + ": the image has " + std::to_string(image.channels) + " channels (1 or 3 expected)");
  if (image.pixels.size() != static_cast<size_t>(image.width) * image.height * image.channels || image.width <= 0 || image.height <= 0)
    throw Error(std::string(what) + ": the image's pixels do not match its size " + sizeText(image.width, image.height));
}

// One axis of a PIL-style resample: for output pixel i, the first input pixel and the normalised
// weights of the inputs from there (PIL's precompute_coeffs with the bilinear triangle filter).
struct AxisTaps {
  std::vector<int> first;
  std::vector<int> offset;  // into weights; offset[i + 1] - offset[i] taps for output i
  std::vector<float> weights;
};

AxisTaps resampleTaps(int inSize, int outSize) {
  const double scale = static_cast<double>(inSize) / outSize;
  const double filterScale = std::max(scale, 1.0);
  const double support = 1.0 * filterScale;  // the triangle's support (1) widened when shrinking
  AxisTaps taps;
  taps.first.resize(outSize);
  taps.offset.assign(1, 0);
  std::vector<double> w;
  for (int i = 0; i < outSize; ++i) {
    const double center = (i + 0.5) * scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), inSize);
    w.clear();
    double total = 0;
    for (int x = lo; x < hi; ++x) {
      const double t = std::fabs((x - center + 0.5) / filterScale);
      w.push_back(t < 1.0 ? 1.0 - t : 0.0);
      total += w.back();
    }
    taps.first[i] = lo;
    for (double v : w) taps.weights.push_back(static_cast<float>(total != 0 ? v / total : 0.0));
    taps.offset.push_back(static_cast<int>(taps.weights.size()));
  }
  return taps;
}

// Resamples the axis of `in` with `count` positions `stride` floats apart (the other axis's pixels
// `lineStride` apart, `lines` of them), writing `out` laid out alike with outCount positions.
void resampleAxis(const std::vector<float>& in, std::vector<float>& out, const AxisTaps& taps, int lines, size_t lineStrideIn, size_t lineStrideOut,
                  size_t stride, int channels) {
  const int outCount = static_cast<int>(taps.first.size());
  for (int line = 0; line < lines; ++line) {
    const float* src = in.data() + line * lineStrideIn;
    float* dst = out.data() + line * lineStrideOut;
    for (int i = 0; i < outCount; ++i) {
      for (int c = 0; c < channels; ++c) {
        float sum = 0;
        for (int k = taps.offset[i]; k < taps.offset[i + 1]; ++k) sum += taps.weights[k] * src[(taps.first[i] + k - taps.offset[i]) * stride + c];
        dst[i * stride + c] = sum;
      }
    }
  }
}

// A list of 1 or 3 numbers (or one number), each finite and, when `positive`, above 0.
std::vector<double> readChannelValues(const nlohmann::json& j, const char* key, const std::string& name, bool positive) {
  const nlohmann::json& value = j.at(key);
  std::vector<double> out;
  const auto readOne = [&](const nlohmann::json& item) {
    double number = 0;
    if (jsonFieldProblem(item, number) != nullptr)
      throw Error(name + ": field '" + key + "' must hold finite numbers (got " + (item.is_number() ? item.dump() : item.type_name()) + ")");
    if (positive && number <= 0) throw Error(name + ": field '" + key + "' must hold positive numbers (got " + item.dump() + ")");
    out.push_back(number);
  };
  if (value.is_array()) {
    if (value.size() != 1 && value.size() != 3)
      throw Error(name + ": field '" + key + "' must be a number or a list of 1 or 3 numbers (got " + std::to_string(value.size()) + " values)");
    for (const auto& item : value) readOne(item);
  } else {
    readOne(value);
  }
  return out;
}

// One side of field 'size' ("size.height", ...; `what` empty for a bare number), 1..4096.
int readSide(const nlohmann::json& value, const std::string& name, const std::string& what) {
  const std::string field = "'size" + (what.empty() ? "" : "." + what) + "'";
  int side = 0;
  if (const char* problem = jsonFieldProblem(value, side))
    throw Error(name + ": field " + field + " " + problem + " (got " + (value.is_number() ? value.dump() : value.type_name()) + ")");
  if (side <= 0 || side > 4096) throw Error(name + ": field " + field + " must be 1..4096 (got " + std::to_string(side) + ")");
  return side;
}

void readSize(const nlohmann::json& j, ImagePreprocessing& p, const std::string& name) {
  const nlohmann::json& size = j.at("size");
  if (size.is_object() && size.contains("height") && size.contains("width")) {
    p.height = readSide(size["height"], name, "height");
    p.width = readSide(size["width"], name, "width");
  } else if (size.is_object() && size.contains("shortest_edge")) {
    p.height = p.width = readSide(size["shortest_edge"], name, "shortest_edge");
  } else if (size.is_number()) {
    p.height = p.width = readSide(size, name, "");
  } else {
    throw Error(name + ": field 'size' must be {\"height\": h, \"width\": w}, {\"shortest_edge\": n} or a number (got " +
                std::string(size.type_name()) + ")");
  }
}

// The per-channel value of a mean / stdev list of 1 value or one per channel.
double channelValue(const std::vector<double>& values, int c, int channels, const char* what) {
  if (values.size() == 1) return values[0];
  if (static_cast<int>(values.size()) != channels)
    throw Error(std::string("image preprocessing: ") + what + " has " + std::to_string(values.size()) + " values for a " + std::to_string(channels) +
                "-channel input");
  return values[c];
}

// Whether the pixels on the image's border average above 0.5 (a light background).
bool lightBorder(const Image& image) {
  double sum = 0;
  size_t count = 0;
  for (int y = 0; y < image.height; ++y) {
    const bool edgeRow = y == 0 || y == image.height - 1;
    for (int x = 0; x < image.width; ++x) {
      if (!edgeRow && x != 0 && x != image.width - 1) continue;
      for (int c = 0; c < image.channels; ++c) sum += image.at(y, x, c);
      count += image.channels;
    }
  }
  return count > 0 && sum / static_cast<double>(count) > 0.5;
}

}  // namespace

Image toGrey(const Image& image) {
  requireChannels(image, "toGrey");
  if (image.channels == 1) return image;
  Image grey{image.width, image.height, 1, std::vector<float>(static_cast<size_t>(image.width) * image.height)};
  for (size_t i = 0; i < grey.pixels.size(); ++i) {
    const float* rgb = image.pixels.data() + 3 * i;
    grey.pixels[i] = std::clamp(0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2], 0.0f, 1.0f);
  }
  return grey;
}

Image toRgb(const Image& image) {
  requireChannels(image, "toRgb");
  if (image.channels == 3) return image;
  Image rgb{image.width, image.height, 3, std::vector<float>(image.pixels.size() * 3)};
  for (size_t i = 0; i < image.pixels.size(); ++i) rgb.pixels[3 * i] = rgb.pixels[3 * i + 1] = rgb.pixels[3 * i + 2] = image.pixels[i];
  return rgb;
}

Image resizeImage(const Image& in, int width, int height) {
  requireChannels(in, "resizeImage");
  if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
    throw Error("resizeImage: cannot resize to " + sizeText(width, height) + " (each side 1..16384)");
  const size_t channels = static_cast<size_t>(in.channels);
  if (width == in.width && height == in.height) return in;
  Image out{width, height, in.channels, {}};
  std::vector<float> wide;  // after the horizontal pass (each row), when the width changes
  if (width != in.width) {
    wide.resize(static_cast<size_t>(width) * in.height * channels);
    resampleAxis(in.pixels, wide, resampleTaps(in.width, width), in.height, in.width * channels, width * channels, channels, in.channels);
  }
  if (height == in.height) {
    out.pixels = std::move(wide);
  } else {  // vertical pass: each column, its pixels a row apart
    out.pixels.resize(static_cast<size_t>(width) * height * channels);
    resampleAxis(width != in.width ? wide : in.pixels, out.pixels, resampleTaps(in.height, height), width, channels, channels, width * channels,
                 in.channels);
  }
  return out;
}

ImagePreprocessing parsePreprocessorConfig(const nlohmann::json& j, const std::string& name) {
  if (!j.is_object()) throw Error(name + ": not a JSON object (got " + std::string(j.type_name()) + ")");
  ImagePreprocessing p;
  readJsonField(j, "do_resize", p.doResize, name);
  if (j.contains("size")) readSize(j, p, name);
  readJsonField(j, "do_rescale", p.doRescale, name);
  const bool hasFactor = readJsonField(j, "rescale_factor", p.rescaleFactor, name);
  if (hasFactor && p.rescaleFactor <= 0) throw Error(name + ": field 'rescale_factor' must be positive (got " + j["rescale_factor"].dump() + ")");
  readJsonField(j, "do_normalize", p.doNormalize, name);
  if (j.contains("image_mean")) p.mean = readChannelValues(j, "image_mean", name, false);
  if (j.contains("image_std")) p.stdev = readChannelValues(j, "image_std", name, true);
  if (readJsonField(j, "tscope_levels", p.levels, name)) {
    if (p.levels < 0 || p.levels > 65535) throw Error(name + ": field 'tscope_levels' must be 0..65535 (got " + std::to_string(p.levels) + ")");
    if (p.levels > 0 && !hasFactor) p.rescaleFactor = 1.0 / p.levels;
  }
  readJsonField(j, "tscope_invert_when_light", p.invertWhenLight, name);
  return p;
}

nlohmann::json preprocessorConfigJson(const ImagePreprocessing& p) {
  nlohmann::json j;
  j["image_processor_type"] = "ViTImageProcessor";
  j["do_resize"] = p.doResize;
  j["size"] = {{"height", p.height}, {"width", p.width}};
  j["resample"] = 2;  // PIL's BILINEAR
  j["do_rescale"] = p.doRescale;
  j["rescale_factor"] = p.rescaleFactor;
  j["do_normalize"] = p.doNormalize;
  j["image_mean"] = p.mean;
  j["image_std"] = p.stdev;
  if (p.levels > 0) j["tscope_levels"] = p.levels;
  if (p.invertWhenLight) j["tscope_invert_when_light"] = true;
  return j;
}

std::vector<float> preprocessImage(const Image& image, const ImagePreprocessing& p, int channels) {
  if (channels != 1 && channels != 3) throw Error("image preprocessing: the model takes " + std::to_string(channels) + " channels (1 or 3 expected)");
  if (p.width <= 0 || p.height <= 0 || p.width > 4096 || p.height > 4096)
    throw Error("image preprocessing: the input size " + sizeText(p.width, p.height) + " is not 1..4096 on a side");
  // RGB -> grey before resizing, grey -> RGB after, and the inversion on the result: each step is
  // linear and the resize's weights sum to 1, so the order only changes how many pixels are copied.
  requireChannels(image, "image preprocessing");
  Image grey;
  const Image& source = channels == 1 && image.channels == 3 ? (grey = toGrey(image)) : image;
  const bool invert = p.invertWhenLight && lightBorder(source);
  if (!p.doResize && (source.width != p.width || source.height != p.height))
    throw Error("image preprocessing: the image is " + sizeText(source.width, source.height) + " pixels but the model takes " +
                sizeText(p.width, p.height) + " and do_resize is false");
  Image work = resizeImage(source, p.width, p.height);  // a copy when the size is the same
  if (channels == 3) work = toRgb(work);
  if (invert)
    for (float& v : work.pixels) v = 1.0f - v;
  std::vector<double> mean(channels, 0.0), stdev(channels, 1.0);
  if (p.doNormalize) {
    for (int c = 0; c < channels; ++c) {
      mean[c] = channelValue(p.mean, c, channels, "image_mean");
      stdev[c] = channelValue(p.stdev, c, channels, "image_std");
      if (!(stdev[c] > 0) || !std::isfinite(stdev[c]) || !std::isfinite(mean[c]))
        throw Error("image preprocessing: image_std must be positive and image_mean finite");
    }
  }
  const size_t plane = static_cast<size_t>(p.width) * p.height;
  std::vector<float> out(plane * channels);
  for (size_t i = 0; i < plane; ++i) {
    for (int c = 0; c < channels; ++c) {
      const double v = work.pixels[i * channels + c];
      double raw = p.levels > 0 ? std::round(v * p.levels) : v * 255.0;
      if (p.doRescale) raw *= p.rescaleFactor;
      if (p.doNormalize) raw = (raw - mean[c]) / stdev[c];
      out[c * plane + i] = static_cast<float>(raw);
    }
  }
  return out;
}

}  // namespace tscope
