// Buffer's RAII plumbing and the host memory shared by the CPU backends (the ops live in
// backend_reference.cpp and backend_cpu.cpp).
#include "model/nn/backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "model/core/error.h"
#include "model/generate/sampling.h"
#include "model/nn/ops_reference.h"
#include "model/nn/positional.h"

namespace tscope {

std::vector<double> ropePairFrequencies(const AttentionShape& s) {
  if (s.ropeFrequencies) return std::vector<double>(s.ropeFrequencies, s.ropeFrequencies + s.headDim / 2);
  return ropeInverseFrequencies(s.headDim, s.ropeBase);
}

Buffer::~Buffer() {
  if (owner_ && data_) owner_->release(data_);
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (owner_ && data_) owner_->release(data_);
    owner_ = other.owner_;
    data_ = other.data_;
    count_ = other.count_;
    other.owner_ = nullptr;
    other.data_ = nullptr;
    other.count_ = 0;
  }
  return *this;
}

Buffer HostBackend::allocate(size_t count) { return Buffer(this, count ? new float[count]() : nullptr, count); }
void HostBackend::release(float* data) { delete[] data; }
void HostBackend::upload(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void HostBackend::download(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }
void HostBackend::copy(float* dst, const float* src, size_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void Backend::addNorm(float* x, const float* y, float* out, const float* weight, const float* bias, int T, int C, float eps, NormKind kind) {
  add(x, y, (size_t)T * C);
  if (kind == NormKind::None) copy(out, x, (size_t)T * C);  // norm none: the identity
  else if (kind == NormKind::RmsNorm) rmsNorm(out, x, weight, T, C, eps);
  else layerNorm(out, x, weight, bias, T, C, eps);
}

void Backend::matmulActivate(float* out, const float* in, const float* weight, const float* bias, int T, int K, int N, Activation activation) {
  matmul(out, in, weight, bias, T, K, N);
  activate(out, (size_t)T * N, activation);
}

void Backend::headRmsNorm(float* qkv, const float* qWeight, const float* kWeight, int rows, int H, int Hkv, int D, int stride, float eps) {
  for (int r = 0; r < rows; ++r) {
    float* row = qkv + (size_t)r * stride;
    rmsNorm(row, row, qWeight, H, D, eps);                                    // Q: H rows of D
    rmsNorm(row + (size_t)H * D, row + (size_t)H * D, kWeight, Hkv, D, eps);  // K: Hkv rows of D
  }
}

void Backend::matmulPacked(float* out, const float* in, const PackedMatrix& weight, const float* bias, int T) {
  if (!isHost()) throw Error("the " + name() + " backend takes float32 weights, not 16-bit halves");
  const int64_t N = weight.rows, K = weight.cols;
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    weight.rowToFloat(n, row.data());
    for (int t = 0; t < T; ++t) {
      const float* x = in + t * K;
      double sum = bias ? bias[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) sum += static_cast<double>(x[k]) * row[k];
      out[t * N + n] = static_cast<float>(sum);
    }
  }
}

void Backend::embedPacked(float* out, const int* hostTokens, const PackedMatrix& wte, const float* positions, int T, int pos0) {
  if (!isHost()) throw Error("the " + name() + " backend takes float32 weights, not 16-bit halves");
  const int64_t C = wte.cols;
  for (int t = 0; t < T; ++t) {
    float* o = out + t * C;
    wte.rowToFloat(hostTokens[t], o);
    if (positions)
      for (int64_t c = 0; c < C; ++c) o[c] += positions[(pos0 + t) * C + c];
  }
}

void Backend::crossAttention(float* out, float* probs, const float* q, const float* kv, int T, int S, int H, int Hkv, int D) {
  if (isHost()) {
    ref::crossAttention(out, probs, q, kv, T, S, H, Hkv, D);
    return;
  }
  // A device without its own kernel: the plain loop on host copies.
  const size_t TC = (size_t)T * H * D;
  std::vector<float> hostQ(TC), hostKv((size_t)S * 2 * Hkv * D), hostOut(TC), hostProbs(probs ? (size_t)H * T * S : 0);
  download(hostQ.data(), q, hostQ.size());
  download(hostKv.data(), kv, hostKv.size());
  ref::crossAttention(hostOut.data(), probs ? hostProbs.data() : nullptr, hostQ.data(), hostKv.data(), T, S, H, Hkv, D);
  upload(out, hostOut.data(), TC);
  if (probs) upload(probs, hostProbs.data(), hostProbs.size());
}

int Backend::sampleToken(const float* logits, int V, const SamplingParams& params, Rng& rng) {
  std::vector<float> host(V);
  download(host.data(), logits, V);
  return sampleNext(host, params, rng);
}

namespace {
[[noreturn]] void noRecording(const Backend& backend) { throw Error("the " + backend.name() + " backend cannot record decode steps"); }
}  // namespace

void Backend::beginRecording() { noRecording(*this); }
void Backend::endRecording() { noRecording(*this); }
void Backend::setStep(int, int, const Rng&) { noRecording(*this); }
int Backend::replayStep(Rng*) { noRecording(*this); }
int Backend::stepResult(Rng*) { noRecording(*this); }
void Backend::embedStep(float*, const float*, const float*, int) { noRecording(*this); }
void Backend::sampleStep(const float*, int, const SamplingParams&) { noRecording(*this); }

}  // namespace tscope
