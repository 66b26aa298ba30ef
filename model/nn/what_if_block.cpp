// The uniform-attention what-if inside the block forward (what_if.h, block.h): a layer's softmax
// replaced by the mean over the keys each query sees, computed on the host from the K/V store the
// backend's attention call just wrote (through copies on a device).
#include <algorithm>
#include <limits>
#include <vector>

#include "model/nn/block.h"

namespace tscope {

void BlockForward::uniformAttention(float* attn, float* probs, float* scores, const float* values, const AttentionShape& shape) {
  const int T = shape.T, Tk = shape.keys(), H = shape.nHead, D = shape.headDim, KV = shape.kvDim(), A = H * D;
  const int group = H / shape.kvHeads();
  std::vector<float> valuesCopy;
  const float* v = hostView(*backend_, values, (size_t)Tk * KV, valuesCopy);
  std::vector<float> hostProbs(probs ? (size_t)H * T * Tk : 0), hostScores(scores ? hostProbs.size() : 0);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<float> rows((size_t)T * A);
  std::vector<double> sum(D);
  for (int t = 0; t < T; ++t) {
    const int p = shape.pos0 + t;
    int visible = 0;
    for (int j = 0; j < Tk; ++j) visible += shape.visible(p, j) ? 1 : 0;
    const float weight = visible > 0 ? 1.0f / static_cast<float>(visible) : 0.0f;
    for (int h = 0; h < H; ++h) {
      std::fill(sum.begin(), sum.end(), 0.0);
      const int kv = (h / group) * D;
      for (int j = 0; j < Tk; ++j) {
        const bool seen = shape.visible(p, j);
        if (seen)
          for (int d = 0; d < D; ++d) sum[d] += v[(size_t)j * KV + kv + d];
        const size_t at = ((size_t)h * T + t) * Tk + j;
        if (probs) hostProbs[at] = seen ? weight : 0.0f;
        if (scores) hostScores[at] = seen ? 0.0f : kNegInf;
      }
      for (int d = 0; d < D; ++d) rows[(size_t)t * A + h * D + d] = static_cast<float>(sum[d] * weight);
    }
  }
  backend_->upload(attn, rows.data(), rows.size());
  if (probs) backend_->upload(probs, hostProbs.data(), hostProbs.size());
  if (scores) backend_->upload(scores, hostScores.data(), hostScores.size());
}

}  // namespace tscope
