// The Vision panel's input (vision_input.h).
#include "app/session/vision_input.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "model/core/error.h"
#include "model/core/rng.h"
#include "model/train/digits.h"

namespace tscope::session {

namespace {

float onLevels(float v) { return std::clamp(std::round(v * kDigitLevels) / kDigitLevels, 0.0f, 1.0f); }

}  // namespace

void DigitCanvas::brush(float x, float y, bool erase) {
  const int cx = static_cast<int>(std::floor(x)), cy = static_cast<int>(std::floor(y));
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) {
      const int px = cx + dx, py = cy + dy;
      if (px < 0 || px >= kSide || py < 0 || py >= kSide) continue;
      const float amount = dx == 0 && dy == 0 ? 0.75f : (dx == 0 || dy == 0 ? 0.125f : 0.0f);
      float& v = ink[py * kSide + px];
      v = onLevels(erase ? v - 2 * amount : v + amount);
    }
}

void DigitCanvas::addNoise(double amount, uint64_t seed) {
  Rng rng(seed);
  for (float& v : ink) v = onLevels(static_cast<float>(v + amount * (2 * rng.uniform() - 1)));
}

void DigitCanvas::shift(int dx, int dy) {
  std::vector<float> moved(ink.size(), 0.0f);
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      const int sx = x - dx, sy = y - dy;
      if (sx >= 0 && sx < kSide && sy >= 0 && sy < kSide) moved[y * kSide + x] = ink[sy * kSide + sx];
    }
  ink = std::move(moved);
}

std::vector<std::string> sampleImages() {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  const fs::path dir = fs::path(TSCOPE_SOURCE_DIR) / ".cache" / "data" / "images";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec)) paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

namespace {

struct LoadedDigits {
  DigitsData data;
  DigitsSplit split;
  bool ok = false;
};

// The digits once per process (a 260 KB file); not installed: ok false.
const LoadedDigits& digits() {
  static const LoadedDigits loaded = [] {
    LoadedDigits d;
    if (defaultDigitsPath().empty()) return d;
    try {
      d.data = loadDigits();
      d.split = digitsSplit(d.data.size());
      d.ok = true;
    } catch (const Error&) {
    }
    return d;
  }();
  return loaded;
}

}  // namespace

int digitTestImages() { return digits().ok ? static_cast<int>(digits().split.test.size()) : 0; }

bool digitTestImage(int index, DigitCanvas& canvas, int* label) {
  const LoadedDigits& d = digits();
  if (!d.ok || index < 0 || index >= static_cast<int>(d.split.test.size())) return false;
  digitImage(d.data, d.split.test[index], canvas.ink.data());
  if (label) *label = d.data.labels[d.split.test[index]];
  return true;
}

std::vector<float> defaultImage(const ModelConfig& config, const ImagePreprocessing& preprocessing, int digit) {
  if (config.image_size == DigitCanvas::kSide && config.num_channels == 1) {
    DigitCanvas canvas;
    if (digitTestImage(digit, canvas)) return canvas.ink;
  }
  for (const std::string& path : sampleImages()) {
    try {
      return preprocessImage(readImage(path), preprocessing, config.num_channels);
    } catch (const Error&) {
    }
  }
  return std::vector<float>(config.imageFloats(), 0.0f);
}

std::vector<float> displayPixels(const std::vector<float>& input, const ImagePreprocessing& p, int channels) {
  std::vector<float> pixels(input.size());
  const size_t plane = channels > 0 ? input.size() / channels : 0;
  for (size_t i = 0; i < input.size(); ++i) {
    const size_t ch = plane ? i / plane : 0;
    double v = input[i];
    if (p.doNormalize) {
      const double mean = p.mean.size() > ch ? p.mean[ch] : p.mean.empty() ? 0 : p.mean[0];
      const double stdev = p.stdev.size() > ch ? p.stdev[ch] : p.stdev.empty() ? 1 : p.stdev[0];
      v = v * stdev + mean;
    }
    pixels[i] = static_cast<float>(std::clamp(v, 0.0, 1.0));
  }
  return pixels;
}

}  // namespace tscope::session
