// The heatmaps' colour maps, the one definition of them: the GPU paints with these control points
// (HeatmapRenderer sets them as the shader's uniforms, shaders/heatmap.frag) and the vector
// figures (svg_figure.h) colour their cells with colourAt, so a saved figure has the screen's colours.
#pragma once
#include <array>

namespace tscope {

enum class Colormap { Perceptual = 0, Diverging = 1 };

struct Rgb {
  float r = 0, g = 0, b = 0;
};

// Perceptual: viridis (matplotlib's colormap data, sampled at 0, 1/8, ..., 1), linear between the
// points: dark blue -> green -> yellow, monotone in lightness.
inline constexpr std::array<Rgb, 9> kPerceptualStops = {{{0.267f, 0.005f, 0.329f},
                                                         {0.279f, 0.175f, 0.483f},
                                                         {0.230f, 0.322f, 0.546f},
                                                         {0.173f, 0.449f, 0.558f},
                                                         {0.128f, 0.567f, 0.551f},
                                                         {0.153f, 0.680f, 0.504f},
                                                         {0.361f, 0.786f, 0.388f},
                                                         {0.668f, 0.862f, 0.196f},
                                                         {0.993f, 0.906f, 0.144f}}};
// Diverging: blue -> white -> red, centred on 0.
inline constexpr std::array<Rgb, 3> kDivergingStops = {{{0.230f, 0.299f, 0.754f}, {0.970f, 0.970f, 0.970f}, {0.706f, 0.016f, 0.150f}}};
// NaN and infinite cells (masked attention).
inline constexpr Rgb kMaskColour{0.55f, 0.55f, 0.58f};

// The colour of `value` on a map scaled lo..hi (a diverging map: -m..m with m = max |lo|, |hi|), as
// the shader computes it.
Rgb colourAt(Colormap colormap, float value, float lo, float hi);

}  // namespace tscope
