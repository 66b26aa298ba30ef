// The ground truth of every efficient-attention variant: plain loops in double that return the
// output and the effective (n, n) map A. For the kernel variants (linear, Performer) and Linformer
// the output is computed in the linear-time (prefix-sum, "RNN") form and the map in the quadratic
// form, independently, so a test of out = A v checks the one against the other.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/core/softmax.h"
#include "model/nn/backend.h"
#include "model/nn/efficient_attention.h"

namespace tscope {
namespace {

VariantResult sizedResult(const HeadQkv& head) {
  VariantResult result;
  result.out.resize(static_cast<size_t>(head.n) * head.d);
  result.map.assign(static_cast<size_t>(head.n) * head.n, 0.0f);
  return result;
}

VariantResult maskedReference(const HeadQkv& head, const std::function<bool(int, int)>& visible) {
  VariantResult result = sizedResult(head);
  maskedAttentionRows(head, 0, head.n, visible, result.out.data(), result.map.data());
  return result;
}

// Kernel attention from log features (n, f) of the queries and the keys: A_ij = phi(q_i).phi(k_j) /
// sum over visible j' of phi(q_i).phi(k_j'). The output in the RNN form: S = sum_j phi(k_j) v_j^T
// (f, d) and z = sum_j phi(k_j) (f), over j <= i when causal (running sums), out_i = phi(q_i).S /
// phi(q_i).z. Both stabilised by max subtractions that cancel in the ratio.
VariantResult kernelReference(const HeadQkv& head, int f, const std::vector<double>& logQ, const std::vector<double>& logK) {
  const int n = head.n, d = head.d;
  VariantResult result = sizedResult(head);
  auto rowMax = [f](const double* row) { return *std::max_element(row, row + f); };
  // The quadratic form: the map.
  std::vector<double> logWeight(static_cast<size_t>(n));  // (n) log phi(q_i).phi(k_j)
  std::vector<double> logTerms(static_cast<size_t>(f));   // (f) log phi_r(q_i) + log phi_r(k_j)
  for (int i = 0; i < n; ++i) {
    const int last = head.causal ? i : n - 1;
    const double* lq = logQ.data() + static_cast<size_t>(i) * f;
    for (int j = 0; j <= last; ++j) {
      const double* lk = logK.data() + static_cast<size_t>(j) * f;
      for (int r = 0; r < f; ++r) logTerms[r] = lq[r] + lk[r];
      logWeight[j] = logSumExp(logTerms);
    }
    softmax(std::span<const double>(logWeight.data(), last + 1), std::span<float>(result.map.data() + static_cast<size_t>(i) * n, last + 1));
  }
  // The RNN form: the output.
  const double keyMax = *std::max_element(logK.begin(), logK.end());
  std::vector<double> S(static_cast<size_t>(f) * d, 0.0), z(static_cast<size_t>(f), 0.0);
  auto addKey = [&](int j) {
    for (int r = 0; r < f; ++r) {
      const double w = std::exp(logK[static_cast<size_t>(j) * f + r] - keyMax);
      z[r] += w;
      for (int c = 0; c < d; ++c) S[static_cast<size_t>(r) * d + c] += w * head.v[static_cast<size_t>(j) * d + c];
    }
  };
  if (!head.causal)
    for (int j = 0; j < n; ++j) addKey(j);
  for (int i = 0; i < n; ++i) {
    if (head.causal) addKey(i);
    const double* lq = logQ.data() + static_cast<size_t>(i) * f;
    const double qMax = rowMax(lq);
    double denominator = 0;
    std::vector<double> numerator(static_cast<size_t>(d), 0.0);
    for (int r = 0; r < f; ++r) {
      const double w = std::exp(lq[r] - qMax);
      denominator += w * z[r];
      for (int c = 0; c < d; ++c) numerator[c] += w * S[static_cast<size_t>(r) * d + c];
    }
    for (int c = 0; c < d; ++c) result.out[static_cast<size_t>(i) * d + c] = static_cast<float>(numerator[c] / denominator);
  }
  return result;
}

// Linear (phi = elu + 1, Katharopoulos et al.: no 1/sqrt(d) scale, since phi is not exp and a
// common factor on q or k would change nothing but the sharpness the features can express anyway)
// and Performer: kernel attention on their log features.
VariantResult kernelVariantReference(const HeadQkv& head, const AttentionVariantParams& params) {
  std::vector<double> logQ, logK;
  const int f = kernelLogFeatures(head, params, logQ, logK);
  return kernelReference(head, f, logQ, logK);
}

// Linformer: K' = E K, V' = F V (k, d) over the visible prefix (causal: K'_i = sum_{j<=i} E[:, j]
// k_j, running sums), P_i = softmax(q_i K'_i^T / sqrt d) (k), out_i = P_i V'_i; the map
// A_ij = sum_r P_ir F_rj over the visible j (not row-stochastic unless F's rows sum to 1). Pooled
// projections divide each row by its visible weight w_r = sum_{j<=i} E_rj (the mean of the visible
// part of the segment) and mask the rows with w_r = 0 (also the empty segments past n when the
// segments are cut from linformerColumns > n), so their maps are row-stochastic.
VariantResult linformerReference(const HeadQkv& head, const AttentionVariantParams& params) {
  const int n = head.n, d = head.d;
  const LinformerProjections proj = linformerProjections(params, n);
  const int k = proj.k;
  VariantResult result = sizedResult(head);
  result.projectedMap.resize(static_cast<size_t>(n) * k);
  result.projectedRows = k;
  LinformerSums sums(head, proj);
  if (!head.causal)
    for (int j = 0; j < n; ++j) sums.add(j);
  std::vector<double> p(static_cast<size_t>(k));
  for (int i = 0; i < n; ++i) {
    if (head.causal) sums.add(i);
    sums.probabilities(i, p.data());
    for (int r = 0; r < k; ++r) result.projectedMap[static_cast<size_t>(i) * k + r] = static_cast<float>(p[r]);
    for (int c = 0; c < d; ++c) {
      double acc = 0;
      for (int r = 0; r < k; ++r)
        if (p[r] != 0) acc += p[r] * sums.values[static_cast<size_t>(r) * d + c] / sums.valueDivisor(r);
      result.out[static_cast<size_t>(i) * d + c] = static_cast<float>(acc);
    }
    const int last = head.causal ? i : n - 1;
    for (int j = 0; j <= last; ++j) {
      double a = 0;
      for (int r = 0; r < k; ++r)
        if (p[r] != 0) a += p[r] * proj.F[static_cast<size_t>(r) * proj.columns + j] / sums.valueDivisor(r);
      result.map[static_cast<size_t>(i) * n + j] = static_cast<float>(a);
    }
  }
  return result;
}

}  // namespace

VariantResult attentionVariantReference(const HeadQkv& head, const AttentionVariantParams& params) {
  checkVariantInputs(head, params);
  const bool causal = head.causal;
  switch (params.variant) {
    case AttentionVariant::Exact:
    case AttentionVariant::Flash: {
      VariantResult result = sizedResult(head);
      exactHeadAttention(head, result.out.data(), result.map.data());
      return result;
    }
    case AttentionVariant::Window: {
      AttentionShape shape;  // the one sliding-window rule, the backend's
      shape.causal = causal;
      shape.window = params.window;
      return maskedReference(head, [shape](int i, int j) { return shape.visible(i, j); });
    }
    case AttentionVariant::Lsh: {
      LshHashing hashing = lshHash(head, params);
      VariantResult result = maskedReference(head, [&hashing, causal](int i, int j) { return hashing.sees(i, j, causal); });
      result.buckets = std::move(hashing.keyBuckets);
      result.sortedOrder = std::move(hashing.sortedOrder);
      return result;
    }
    case AttentionVariant::Linformer: return linformerReference(head, params);
    case AttentionVariant::Linear:
    case AttentionVariant::Performer: return kernelVariantReference(head, params);
  }
  return {};
}

}  // namespace tscope
