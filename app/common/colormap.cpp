// The heatmaps' colour maps (colormap.h), the shader's arithmetic in C++.
#include "app/common/colormap.h"

#include <algorithm>
#include <cmath>

namespace tscope {

namespace {

Rgb mix(const Rgb& a, const Rgb& b, float t) { return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t}; }

}  // namespace

Rgb colourAt(Colormap colormap, float value, float lo, float hi) {
  if (!std::isfinite(value)) return kMaskColour;
  if (colormap == Colormap::Diverging) {
    const float m = std::max(std::abs(lo), std::abs(hi));
    const float t = std::clamp(m > 0 ? 0.5f + 0.5f * value / m : 0.5f, 0.0f, 1.0f);
    return t < 0.5f ? mix(kDivergingStops[0], kDivergingStops[1], t * 2) : mix(kDivergingStops[1], kDivergingStops[2], (t - 0.5f) * 2);
  }
  const float t = hi > lo ? (value - lo) / (hi - lo) : 0.0f;
  const float x = std::clamp(t, 0.0f, 1.0f) * 8;
  const int i = std::min(static_cast<int>(std::floor(x)), 7);
  return mix(kPerceptualStops[i], kPerceptualStops[i + 1], x - static_cast<float>(i));
}

}  // namespace tscope
