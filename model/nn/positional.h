// Positional encodings as pure functions, for the forward pass and for the positional-encoding
// panel: the sinusoidal matrix of "Attention Is All You Need" (base configurable), rotary
// embeddings (RoPE, RoFormer: rotate each (2i, 2i+1) pair of a head), ALiBi's per-head linear
// biases (Press et al. 2022), and a row-similarity helper. Bad arguments throw tscope::Error with
// a one-line message naming the argument. RoPE's pair frequencies may be Llama 3's scaled ones
// (ropeInverseFrequencies); every RoPE rotation in tscope reads them from here.
#pragma once
#include <vector>

#include "model/core/config.h"

namespace tscope {

// (T, d): PE(t, 2i) = sin(t / base^(2i/d)), PE(t, 2i+1) = cos(t / base^(2i/d)). Odd d: the last
// column is a sin column. Computed in double, stored as float.
std::vector<float> sinusoidalEncoding(int T, int d, double base);

// (1 + grid * grid, d): the 2-D sin-cos table of a ViT's patch grid (MAE, He et al. 2022, and its
// get_2d_sincos_pos_embed): row 0 ([CLS]) is zero; patch (r, c), row-major, has in its first d/2
// columns the 1-D encoding of its column c and in its last d/2 that of its row r, each half
// [sin(p * w_0..w_{d/4-1}), cos(p * w_0..w_{d/4-1})] with w_i = base^(-i / (d/4)). d must be a
// multiple of 4. An image model with position_encoding "sinusoidal" adds this table, not the 1-D one.
std::vector<float> sincos2dEncoding(int grid, int d, double base);

// The fixed position table a model adds ((n_positions, C)): sincos2dEncoding for an image model,
// sinusoidalEncoding otherwise. Only for position_encoding "sinusoidal".
std::vector<float> fixedPositionTable(const ModelConfig& config);

// (T, d/2): the RoPE rotation angle of pair i at position t, theta(t, i) = t * base^(-2i/d);
// d is the head dimension and must be even.
std::vector<float> ropeAngles(int T, int d, double base);

// Llama 3's RoPE scaling (HF rope_scaling, rope_type "llama3"); factor 0 = none.
struct RopeScaling {
  double factor = 0;
  double lowFreqFactor = 1;
  double highFreqFactor = 4;
  double originalContext = 8192;
};

// (d/2): the inverse frequency of RoPE pair i, the angle it turns per position. Plain:
// f_i = base^(-2i/d). Llama 3 scaling, with wavelength w_i = 2 pi / f_i, low = originalContext /
// lowFreqFactor and high = originalContext / highFreqFactor: w_i < high keeps f_i (fast pairs);
// w_i > low takes f_i / factor (slow pairs); between, s = (originalContext / w_i - lowFreqFactor) /
// (highFreqFactor - lowFreqFactor) blends them: (1 - s) f_i / factor + s f_i. Computed in double.
std::vector<double> ropeInverseFrequencies(int d, double base, const RopeScaling& scaling = {});
// The same for a config: D = headDim(), base = position_base, its rope_scaling_* fields.
std::vector<double> ropeInverseFrequencies(const ModelConfig& config);
// A config's rope_scaling_* fields (factor 0 when it has none).
RopeScaling ropeScalingOf(const ModelConfig& config);

// (T, d/2): theta(t, i) = t * frequencies[i] (d/2 of them, e.g. ropeInverseFrequencies).
std::vector<float> ropeAngles(int T, const std::vector<double>& frequencies);

// Rotates, in place, the rows of x at absolute positions pos0 .. pos0+T-1: each row holds nHeads
// heads of headDim values (headDim even), rows `rowStride` floats apart; pair (2i, 2i+1) of every
// head turns by theta(pos, i) computed with d = headDim: (x0, x1) -> (x0 cos - x1 sin,
// x0 sin + x1 cos). Needs pos0 >= 0 and rowStride >= nHeads * headDim; padding is left alone.
// inverse: turns back by -theta (the rotation's transpose: the gradient of the unrotated rows from
// that of the rotated ones).
void applyRope(float* x, int T, int nHeads, int headDim, int rowStride, int pos0, double base, bool inverse = false);
// The same with pair i turning by pos * frequencies[i] (headDim/2 values, e.g.
// ropeInverseFrequencies; scaled RoPE); null frequencies: base^(-2i/headDim), as above.
void applyRope(float* x, int T, int nHeads, int headDim, int rowStride, int pos0, double base, const double* frequencies, bool inverse = false);

// (H): ALiBi head slopes. For H a power of two, m_h = 2^(-8h/H), h = 1..H; otherwise the slopes
// of the next lower power of two n, followed by the 1st, 3rd, 5th, ... slopes of 2n until there
// are H (the recipe in the paper's code). H = 12: 2^-1 .. 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
std::vector<float> alibiSlopes(int H);

// (H, T, T): the bias ALiBi adds to attention scores of query i and key j, -m_h * |i - j| (+0 on
// the diagonal); entries a causal model never uses (j > i) are -infinity when causal.
std::vector<float> alibiBias(int H, int T, bool causal);

// (T, T): S(t, u) = row_t . row_u of a (T, d) matrix, summed in double. For the sinusoidal matrix
// with even d, S(t, t + k) = sum_i cos(k * base^(-2i/d)) depends only on the offset k.
std::vector<float> rowSimilarity(const float* matrix, int T, int d);

}  // namespace tscope
