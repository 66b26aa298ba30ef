#version 330 core
// Colours a matrix of floats (an R32F texture, one texel per cell) with a colour map.
// colormap 0: perceptual (viridis: dark blue -> green -> yellow, monotone in lightness); 1:
// diverging (blue -> white -> red, centred on 0). NaN and infinite cells (masked attention) are
// drawn in maskColor. Values are mapped from [lo, hi] to [0, 1]. The colour stops and the mask
// colour come from app/common/colormap.h (HeatmapRenderer sets them), whose colourAt computes the
// same colours for the vector figures.
in vec2 uv;
out vec4 color;
uniform sampler2D values;
uniform float lo;
uniform float hi;
uniform int colormap;
uniform vec4 maskColor;
uniform vec3 viridis[9];         // kPerceptualStops
uniform vec3 divergingStops[3];  // kDivergingStops: blue, white, red

vec3 perceptual(float t) {
  float x = clamp(t, 0.0, 1.0) * 8.0;
  int i = int(min(floor(x), 7.0));
  return mix(viridis[i], viridis[i + 1], x - float(i));
}

vec3 diverging(float t) {
  // t in [0, 1], 0.5 = zero
  return t < 0.5 ? mix(divergingStops[0], divergingStops[1], t * 2.0) : mix(divergingStops[1], divergingStops[2], (t - 0.5) * 2.0);
}

void main() {
  float v = texture(values, uv).r;
  if (isnan(v) || isinf(v)) {
    color = maskColor;
    return;
  }
  float t;
  if (colormap == 1) {
    float m = max(abs(lo), abs(hi));
    t = m > 0.0 ? 0.5 + 0.5 * v / m : 0.5;
    color = vec4(diverging(clamp(t, 0.0, 1.0)), 1.0);
  } else {
    t = hi > lo ? (v - lo) / (hi - lo) : 0.0;
    color = vec4(perceptual(t), 1.0);
  }
}
