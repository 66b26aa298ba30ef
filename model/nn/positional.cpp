// Positional encodings (sinusoidal, RoPE, ALiBi) and the row-similarity helper declared in
// positional.h. Every angle, slope and dot product is computed in double and rounded to float
// once, when stored; bad arguments throw tscope::Error with a one-line message naming them.
#include "model/nn/positional.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>

#include "model/core/error.h"

namespace tscope {
namespace {

// Throws "function: what (got value)" unless ok.
template <typename Value>
void require(bool ok, const char* function, const char* what, Value got) {
  if (ok) return;
  std::ostringstream message;
  message << function << ": " << what << " (got " << got << ")";
  throw Error(message.str());
}

void requireBase(double base, const char* function) { require(std::isfinite(base) && base > 0, function, "base must be a finite number > 0", base); }

// The angular frequency of pair i in a vector of d values: base^(-2i/d). Position t turns the
// pair by t times this (sinusoidal: the argument of sin/cos; RoPE: the rotation angle).
double pairFrequency(int i, int d, double base) { return std::pow(base, -2.0 * i / d); }

// ALiBi slopes for n a power of two: 2^(-8h/n), h = 1..n; a geometric sequence whose first term
// and ratio are both 2^(-8/n).
double powerOfTwoSlope(int h, int n) { return std::exp2(-8.0 * h / n); }

// The slopes as doubles; alibiSlopes stores them and alibiBias multiplies with them unrounded.
std::vector<double> alibiSlopesDouble(int H) {
  const int lower = static_cast<int>(std::bit_floor(static_cast<unsigned>(H)));
  std::vector<double> slopes;
  slopes.reserve(H);
  for (int h = 1; h <= lower; ++h) slopes.push_back(powerOfTwoSlope(h, lower));
  // The remaining H - lower heads take the 1st, 3rd, 5th, ... slope of 2 * lower heads, which
  // fall between the slopes already taken (Press et al. 2022, "Train Short, Test Long").
  for (int k = 0; static_cast<int>(slopes.size()) < H; ++k) slopes.push_back(powerOfTwoSlope(2 * k + 1, 2 * lower));
  return slopes;
}

}  // namespace

std::vector<float> sinusoidalEncoding(int T, int d, double base) {
  require(T >= 0, "sinusoidalEncoding", "T must be >= 0", T);
  require(d >= 1, "sinusoidalEncoding", "d must be >= 1", d);
  requireBase(base, "sinusoidalEncoding");
  std::vector<float> encoding(static_cast<size_t>(T) * d);  // (T, d)
  for (int column = 0; column < d; ++column) {
    const double frequency = pairFrequency(column / 2, d, base);
    const bool isSin = column % 2 == 0;  // odd d: the last column is even, so a sin column
    for (int t = 0; t < T; ++t) {
      const double angle = t * frequency;
      encoding[static_cast<size_t>(t) * d + column] = static_cast<float>(isSin ? std::sin(angle) : std::cos(angle));
    }
  }
  return encoding;
}

std::vector<float> sincos2dEncoding(int grid, int d, double base) {
  require(grid >= 1, "sincos2dEncoding", "grid must be >= 1", grid);
  require(d >= 4 && d % 4 == 0, "sincos2dEncoding", "d must be a multiple of 4", d);
  requireBase(base, "sincos2dEncoding");
  const int quarter = d / 4;
  std::vector<float> encoding(static_cast<size_t>(1 + grid * grid) * d, 0.0f);  // row 0: [CLS], zero
  for (int r = 0; r < grid; ++r)
    for (int c = 0; c < grid; ++c) {
      float* row = encoding.data() + static_cast<size_t>(1 + r * grid + c) * d;
      const int coordinates[2] = {c, r};  // the column's half first, as MAE's meshgrid orders them
      for (int half = 0; half < 2; ++half)
        for (int i = 0; i < quarter; ++i) {
          const double angle = coordinates[half] * std::pow(base, -static_cast<double>(i) / quarter);
          row[half * 2 * quarter + i] = static_cast<float>(std::sin(angle));
          row[half * 2 * quarter + quarter + i] = static_cast<float>(std::cos(angle));
        }
    }
  return encoding;
}

std::vector<float> fixedPositionTable(const ModelConfig& config) {
  if (config.isImage()) return sincos2dEncoding(config.patchGrid(), config.n_embd, config.position_base);
  return sinusoidalEncoding(config.n_positions, config.n_embd, config.position_base);
}

std::vector<double> ropeInverseFrequencies(int d, double base, const RopeScaling& scaling) {
  require(d >= 2 && d % 2 == 0, "ropeInverseFrequencies", "d (the head dimension) must be even and >= 2", d);
  requireBase(base, "ropeInverseFrequencies");
  const bool scaled = scaling.factor != 0;
  if (scaled) {
    require(std::isfinite(scaling.factor) && scaling.factor > 0, "ropeInverseFrequencies", "the scaling factor must be finite and > 0",
            scaling.factor);
    require(scaling.lowFreqFactor > 0 && scaling.highFreqFactor > scaling.lowFreqFactor && std::isfinite(scaling.highFreqFactor),
            "ropeInverseFrequencies", "the frequency factors need 0 < lowFreqFactor < highFreqFactor, finite; highFreqFactor",
            scaling.highFreqFactor);
    require(std::isfinite(scaling.originalContext) && scaling.originalContext > 0, "ropeInverseFrequencies", "the original context must be > 0",
            scaling.originalContext);
  }
  const double slowestKept = scaling.originalContext / scaling.highFreqFactor;   // wavelengths below: unchanged
  const double fastestScaled = scaling.originalContext / scaling.lowFreqFactor;  // wavelengths above: divided by factor
  std::vector<double> frequencies(d / 2);
  for (int i = 0; i < d / 2; ++i) {
    const double frequency = pairFrequency(i, d, base);
    frequencies[i] = frequency;
    if (!scaled) continue;
    const double wavelength = 2 * std::numbers::pi / frequency;
    if (wavelength < slowestKept) continue;
    if (wavelength > fastestScaled) {
      frequencies[i] = frequency / scaling.factor;
    } else {
      const double smooth = (scaling.originalContext / wavelength - scaling.lowFreqFactor) / (scaling.highFreqFactor - scaling.lowFreqFactor);
      frequencies[i] = (1 - smooth) * frequency / scaling.factor + smooth * frequency;
    }
  }
  return frequencies;
}

RopeScaling ropeScalingOf(const ModelConfig& config) {
  if (!config.hasRopeScaling()) return {};
  return {config.rope_scaling_factor, config.rope_low_freq_factor, config.rope_high_freq_factor, static_cast<double>(config.rope_original_context)};
}

std::vector<double> ropeInverseFrequencies(const ModelConfig& config) {
  return ropeInverseFrequencies(config.headDim(), config.position_base, ropeScalingOf(config));
}

std::vector<float> ropeAngles(int T, const std::vector<double>& frequencies) {
  require(T >= 0, "ropeAngles", "T must be >= 0", T);
  const size_t pairs = frequencies.size();
  std::vector<float> angles(static_cast<size_t>(T) * pairs);  // (T, d/2)
  for (size_t i = 0; i < pairs; ++i)
    for (int t = 0; t < T; ++t) angles[static_cast<size_t>(t) * pairs + i] = static_cast<float>(t * frequencies[i]);
  return angles;
}

std::vector<float> ropeAngles(int T, int d, double base) {
  require(T >= 0, "ropeAngles", "T must be >= 0", T);
  require(d >= 2 && d % 2 == 0, "ropeAngles", "d (the head dimension) must be even and >= 2", d);
  requireBase(base, "ropeAngles");
  return ropeAngles(T, ropeInverseFrequencies(d, base));
}

void applyRope(float* x, int T, int nHeads, int headDim, int rowStride, int pos0, double base, bool inverse) {
  applyRope(x, T, nHeads, headDim, rowStride, pos0, base, nullptr, inverse);
}

void applyRope(float* x, int T, int nHeads, int headDim, int rowStride, int pos0, double base, const double* frequencies, bool inverse) {
  require(T >= 0, "applyRope", "T must be >= 0", T);
  require(nHeads >= 1, "applyRope", "nHeads must be >= 1", nHeads);
  require(headDim >= 2 && headDim % 2 == 0, "applyRope", "headDim must be even and >= 2", headDim);
  require(static_cast<int64_t>(rowStride) >= static_cast<int64_t>(nHeads) * headDim, "applyRope", "rowStride must be >= nHeads * headDim", rowStride);
  require(pos0 >= 0, "applyRope", "pos0 must be >= 0", pos0);
  if (!frequencies) requireBase(base, "applyRope");
  require(x != nullptr || T == 0, "applyRope", "x must not be null", "null");
  // Angles are shared by every head of a row, so each (position, pair) costs one pow and one
  // sin/cos, and nothing is allocated (this runs once per decoded token).
  for (int t = 0; t < T; ++t) {
    float* row = x + static_cast<size_t>(t) * rowStride;
    const double position = static_cast<double>(pos0) + t;
    for (int i = 0; i < headDim / 2; ++i) {
      const double angle = position * (frequencies ? frequencies[i] : pairFrequency(i, headDim, base));
      const double cosine = std::cos(angle), sine = inverse ? -std::sin(angle) : std::sin(angle);
      for (int head = 0; head < nHeads; ++head) {
        float* pair = row + static_cast<size_t>(head) * headDim + 2 * i;
        const double x0 = pair[0], x1 = pair[1];
        pair[0] = static_cast<float>(x0 * cosine - x1 * sine);
        pair[1] = static_cast<float>(x0 * sine + x1 * cosine);
      }
    }
  }
}

std::vector<float> alibiSlopes(int H) {
  require(H >= 1, "alibiSlopes", "H must be >= 1", H);
  const std::vector<double> slopes = alibiSlopesDouble(H);
  return std::vector<float>(slopes.begin(), slopes.end());
}

std::vector<float> alibiBias(int H, int T, bool causal) {
  require(H >= 1, "alibiBias", "H must be >= 1", H);
  require(T >= 0, "alibiBias", "T must be >= 0", T);
  const std::vector<double> slopes = alibiSlopesDouble(H);
  const float masked = -std::numeric_limits<float>::infinity();
  std::vector<float> bias(static_cast<size_t>(H) * T * T);  // (H, T, T): query i, key j
  for (int h = 0; h < H; ++h) {
    for (int i = 0; i < T; ++i) {
      float* row = bias.data() + (static_cast<size_t>(h) * T + i) * T;
      for (int j = 0; j < T; ++j) {
        const int distance = std::abs(i - j);
        if (causal && j > i) row[j] = masked;
        else row[j] = distance == 0 ? 0.0f : static_cast<float>(-slopes[h] * distance);  // +0, not -0, on the diagonal
      }
    }
  }
  return bias;
}

std::vector<float> rowSimilarity(const float* matrix, int T, int d) {
  require(T >= 0, "rowSimilarity", "T must be >= 0", T);
  require(d >= 1, "rowSimilarity", "d must be >= 1", d);
  require(matrix != nullptr || T == 0, "rowSimilarity", "matrix must not be null", "null");
  std::vector<float> similarity(static_cast<size_t>(T) * T);  // (T, T), symmetric
  for (int t = 0; t < T; ++t) {
    const float* rowT = matrix + static_cast<size_t>(t) * d;
    for (int u = t; u < T; ++u) {
      const float* rowU = matrix + static_cast<size_t>(u) * d;
      double dot = 0;
      for (int k = 0; k < d; ++k) dot += static_cast<double>(rowT[k]) * rowU[k];
      similarity[static_cast<size_t>(t) * T + u] = similarity[static_cast<size_t>(u) * T + t] = static_cast<float>(dot);
    }
  }
  return similarity;
}

}  // namespace tscope
