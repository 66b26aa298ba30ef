// BlockBackward::variantAttention (block_backward.h): an efficient-attention variant's backward
// over every head, on the host.
#include <algorithm>
#include <vector>

#include "model/nn/positional.h"
#include "model/train/block_backward.h"

namespace tscope {

void BlockBackward::variantAttention(float* dqkv, const float* dattn, const float* qkv, const AttentionShape& s, int B,
                                     const AttentionVariantParams& params) {
  Backend& fw = *fw_;
  std::vector<float>& scratch = dqkvHost_;
  const int T = s.T, H = s.nHead, D = s.headDim, C = H * D, QKV = s.qkvDim(), KV = s.kvDim(), group = H / s.kvHeads();
  const size_t R = (size_t)B * T;
  std::vector<float> qkvCopy, dattnCopy;
  const float* hostQkv = hostView(fw, qkv, R * QKV, qkvCopy);
  const float* hostDattn = hostView(fw, dattn, R * C, dattnCopy);
  scratch.assign(R * QKV, 0.0f);
  std::vector<float> q((size_t)T * D), k(q.size()), v(q.size()), dout(q.size()), dq(q.size()), dk(q.size()), dv(q.size());
  for (int b = 0; b < B; ++b) {
    const size_t row0 = (size_t)b * T;
    for (int h = 0; h < H; ++h) {
      const int kvColumn = (h / group) * D;
      for (int t = 0; t < T; ++t) {
        const float* row = hostQkv + (row0 + t) * QKV;
        std::copy_n(row + h * D, D, q.data() + (size_t)t * D);
        std::copy_n(row + C + kvColumn, D, k.data() + (size_t)t * D);
        std::copy_n(row + C + KV + kvColumn, D, v.data() + (size_t)t * D);
        std::copy_n(hostDattn + (row0 + t) * C + h * D, D, dout.data() + (size_t)t * D);
      }
      std::fill(dq.begin(), dq.end(), 0.0f);
      std::fill(dk.begin(), dk.end(), 0.0f);
      std::fill(dv.begin(), dv.end(), 0.0f);
      attentionVariantBackward(HeadQkv{q.data(), k.data(), v.data(), T, D, s.causal}, params, dout.data(), dq.data(), dk.data(), dv.data());
      for (int t = 0; t < T; ++t) {
        float* row = scratch.data() + (row0 + t) * QKV;
        for (int i = 0; i < D; ++i) {
          row[h * D + i] += dq[(size_t)t * D + i];
          row[C + kvColumn + i] += dk[(size_t)t * D + i];
          row[C + KV + kvColumn + i] += dv[(size_t)t * D + i];
        }
      }
    }
    if (s.ropeBase > 0) {
      float* rows = scratch.data() + row0 * QKV;
      applyRope(rows, T, H, D, QKV, 0, s.ropeBase, s.ropeFrequencies, /*inverse=*/true);
      applyRope(rows + C, T, s.kvHeads(), D, QKV, 0, s.ropeBase, s.ropeFrequencies, /*inverse=*/true);
    }
  }
  if (fw.isHost()) {
    fw.add(dqkv, scratch.data(), scratch.size());
    return;
  }
  // A device area that only grows, kept across layers and steps: no allocation (and no cudaFree,
  // which waits for the device) per layer per training step.
  float* device = dqkvStaged_.sized(fw, scratch.size());
  fw.upload(device, scratch.data(), scratch.size());
  fw.add(dqkv, device, scratch.size());
}

}  // namespace tscope
