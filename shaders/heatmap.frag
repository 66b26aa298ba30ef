#version 330 core
// Colours a matrix of floats (an R32F texture, one texel per cell) with a colour map.
// colormap 0: perceptual (a viridis-like ramp: dark blue -> green -> yellow, monotone in
// lightness); 1: diverging (blue -> white -> red, centred on 0). NaN and -inf cells (masked
// attention) are drawn in maskColor. Values are mapped from [lo, hi] to [0, 1].
in vec2 uv;
out vec4 color;
uniform sampler2D values;
uniform float lo;
uniform float hi;
uniform int colormap;
uniform vec4 maskColor;

// Viridis control points (matplotlib's colormap data, sampled at 0, 1/8, ..., 1).
const vec3 viridis[9] = vec3[9](vec3(0.267, 0.005, 0.329), vec3(0.279, 0.175, 0.483), vec3(0.230, 0.322, 0.546),
                                vec3(0.173, 0.449, 0.558), vec3(0.128, 0.567, 0.551), vec3(0.153, 0.680, 0.504),
                                vec3(0.361, 0.786, 0.388), vec3(0.668, 0.862, 0.196), vec3(0.993, 0.906, 0.144));

vec3 perceptual(float t) {
  float x = clamp(t, 0.0, 1.0) * 8.0;
  int i = int(min(floor(x), 7.0));
  return mix(viridis[i], viridis[i + 1], x - float(i));
}

vec3 diverging(float t) {
  // t in [0, 1], 0.5 = zero
  vec3 blue = vec3(0.230, 0.299, 0.754), white = vec3(0.970, 0.970, 0.970), red = vec3(0.706, 0.016, 0.150);
  return t < 0.5 ? mix(blue, white, t * 2.0) : mix(white, red, (t - 0.5) * 2.0);
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
