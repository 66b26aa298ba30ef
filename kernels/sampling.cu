// Next-token sampling on the device, the same pipeline as model/generate/sampling.cpp (softmax with the
// exponent formed in double, temperature, top-k, top-p, renormalisation, one inverse-CDF draw in
// id order with xoshiro256**), in one block of 1024 threads so it can sit in a CUDA graph. Top-k
// and top-p are not sorts: an MSB-first radix descent over order-preserving logit keys finds the
// boundary key (by count for top-k, by probability mass for top-p), and ties at the boundary are
// cut by id with a bisection, so exactly the CPU's prefix of the (logit desc, id asc) order survives.
//
// Where the device can differ from the CPU, and how rarely:
//  - exp: the CPU rounds the exponent to float and calls expf (glibc documents up to ~0.502 ulp, so
//    it is not always the correctly rounded value); here exp runs in double and is rounded to
//    float, the correctly rounded value. Up to ~1e-3 of the weights w_i may differ by one ulp
//    (relative 6e-8), far too little to move a draw across a token boundary but in rare cases.
//  - normalising sums (softmax, top-k, top-p) are doubles added in a fixed tree order, not the
//    CPU's sequential order: they can differ in the last double bit, which changes a float
//    probability only if it lies within ~1e-16 relative of a float midpoint (~1e-9 per token).
//  - prefix decisions (the top-p crossing and the draw) add the float probabilities as exact
//    60-bit fixed point; the CPU adds them in double with ~1e-16 relative error, so the two pick
//    different tokens only when the target lies within ~1e-16 of a cumulative sum (per draw ~1e-13).
// A different probability matters only if it moves a draw across a token boundary, so a device
// token differs from sampleNext's far less than once in a million draws. The rng always advances
// exactly once (never when greedy), so the rng states agree even then.
#include <cstdint>

#include "kernels/cuda_check.h"
#include "kernels/launchers.h"

namespace tscope::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr double kFixedOne = 1152921504606846976.0;  // 2^60: probabilities (sum <= ~1) as exact integers

// --- block-wide helpers (one block of kThreads; every thread calls and gets the result) -------

template <typename Value>
__device__ Value warpSumT(Value v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Fixed tree order, so the result is the same on every run.
template <typename Value>
__device__ Value blockSumT(Value v) {
  __shared__ Value partial[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warpSumT(v);
  __syncthreads();  // partial[] may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  return warpSumT(lane < kWarps ? partial[lane] : Value(0));
}

__device__ int blockMinInt(int v) {
  __shared__ int partial[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset >>= 1) v = min(v, __shfl_xor_sync(kFullMask, v, offset));
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[lane];
  for (int offset = 16; offset > 0; offset >>= 1) v = min(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// The larger (value, id) with ties to the lower id; id == none marks "no value yet".
struct ArgMax {
  float value;
  int id;
};
__device__ ArgMax better(ArgMax a, ArgMax b, int none) {
  if (b.id == none) return a;
  if (a.id == none || b.value > a.value || (b.value == a.value && b.id < a.id)) return b;
  return a;
}
__device__ ArgMax warpArgMax(ArgMax a, int none) {
  for (int offset = 16; offset > 0; offset >>= 1)
    a = better(a, ArgMax{__shfl_xor_sync(kFullMask, a.value, offset), __shfl_xor_sync(kFullMask, a.id, offset)}, none);
  return a;
}
__device__ ArgMax blockArgMax(ArgMax a, int none) {
  __shared__ float values[kWarps];
  __shared__ int ids[kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  a = warpArgMax(a, none);
  __syncthreads();
  if (lane == 0) values[warp] = a.value, ids[warp] = a.id;
  __syncthreads();
  return warpArgMax(ArgMax{values[lane], ids[lane]}, none);
}

// --- keys, fixed point, rng ------------------------------------------------------------------

// A uint32 whose unsigned order is the float order (NaN excluded); -0 maps to +0, because the
// CPU's comparison treats them as equal (a tie broken by id).
__device__ unsigned orderKey(float f) {
  if (f == 0.0f) f = 0.0f;
  const unsigned bits = __float_as_uint(f);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

// Exact for p >= 2^-36 (every float bit lands on the 2^-60 grid); smaller p lose < 2^-60 each.
__device__ unsigned long long toFixed(float p) { return static_cast<unsigned long long>(static_cast<double>(p) * kFixedOne); }

// tscope::Rng::next() (xoshiro256**, Blackman and Vigna) and uniform(): 53 bits times 2^-53.
__device__ double rngUniform(unsigned long long* s) {
  auto rotl = [](unsigned long long x, int bits) { return (x << bits) | (x >> (64 - bits)); };
  const unsigned long long result = rotl(s[1] * 5, 7) * 9;
  const unsigned long long shifted = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= shifted;
  s[3] = rotl(s[3], 45);
  return static_cast<double>(result >> 11) * 0x1.0p-53;
}

// --- the boundary of a prefix of the (logit desc, id asc) order -------------------------------

// The prefix kept: key > thresholdKey, or key == thresholdKey and id < cutoffId.
struct Prefix {
  unsigned thresholdKey;
  int cutoffId;
  __device__ bool keeps(unsigned key, int id) const { return key > thresholdKey || (key == thresholdKey && id < cutoffId); }
};

// The shortest prefix of the (logit desc, id asc) order whose weight reaches `target` (> 0; the
// caller makes sure the total does). weightOf(id) >= 0. Four 8-bit radix levels find the key t
// with weight(key > t) < target <= weight(key >= t); then, if several ids share t, a bisection on
// the id finds the first one at which the running weight reaches the target.
template <typename WeightOf>
__device__ Prefix shortestPrefix(const float* logits, int V, WeightOf weightOf, unsigned long long target) {
  __shared__ unsigned long long histogram[256];
  __shared__ unsigned chosenPrefix;
  __shared__ unsigned long long chosenAbove;
  const int lane = threadIdx.x % 32;
  unsigned prefix = 0;
  unsigned long long above = 0;  // weight of keys above the chosen prefix
  for (int shift = 24; shift >= 0; shift -= 8) {
    const unsigned fixedMask = shift == 24 ? 0u : 0xffffffffu << (shift + 8);
    for (int b = threadIdx.x; b < 256; b += kThreads) histogram[b] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const unsigned key = orderKey(logits[i]);
      if ((key & fixedMask) != prefix) continue;
      const unsigned long long w = weightOf(i);
      if (w) atomicAdd(&histogram[(key >> shift) & 255u], w);
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      // Lane l holds bins 255 - 8l down to 248 - 8l: lane order is descending key order.
      unsigned long long own = 0;
      for (int j = 0; j < 8; ++j) own += histogram[255 - 8 * lane - j];
      unsigned long long inclusive = own;
      for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned long long lower = __shfl_up_sync(kFullMask, inclusive, offset);
        if (lane >= offset) inclusive += lower;
      }
      const unsigned crossing = __ballot_sync(kFullMask, above + inclusive >= target);
      const int first = crossing ? __ffs(crossing) - 1 : 31;  // 31: cannot happen when the total reaches target
      if (lane == first) {
        // The lane's first bin that reaches the target (its last one if none before it does).
        unsigned long long running = above + inclusive - own;
        int bin = 255 - 8 * lane;
        for (int j = 0; j < 7 && running + histogram[bin] < target; ++j, --bin) running += histogram[bin];
        chosenPrefix = prefix | (static_cast<unsigned>(bin) << shift);
        chosenAbove = running;
      }
    }
    __syncthreads();
    prefix = chosenPrefix;
    above = chosenAbove;
  }
  // Ties at the boundary key: usually one id, then no bisection is needed.
  int tied = 0;
  for (int i = threadIdx.x; i < V; i += kThreads) tied += orderKey(logits[i]) == prefix;
  tied = blockSumT(tied);
  int cutoff = V;
  if (tied > 1) {
    int low = 0, high = V;  // reaching the target: false with ids < low, true with ids < high
    while (high - low > 1) {
      const int middle = low + (high - low) / 2;
      unsigned long long weight = 0;
      for (int i = threadIdx.x; i < middle; i += kThreads)
        if (orderKey(logits[i]) == prefix) weight += weightOf(i);
      weight = blockSumT(weight);
      if (above + weight >= target) high = middle;
      else low = middle;
    }
    cutoff = high;
  }
  return Prefix{prefix, cutoff};
}

// probs[i] = kept ? float(probs[i] / sum of kept probs) : 0, the CPU's keepPrefix.
__device__ void keepAndRenormalise(const float* logits, float* probs, int V, Prefix prefix) {
  double kept = 0;
  for (int i = threadIdx.x; i < V; i += kThreads)
    if (prefix.keeps(orderKey(logits[i]), i)) kept += probs[i];
  kept = blockSumT(kept);
  for (int i = threadIdx.x; i < V; i += kThreads) probs[i] = prefix.keeps(orderKey(logits[i]), i) ? static_cast<float>(probs[i] / kept) : 0.0f;
}

// --- the kernel --------------------------------------------------------------------------------

// One block of kThreads. probs (V): scratch for the stage probabilities.
__global__ void __launch_bounds__(kThreads) sampleKernel(const float* logits, int V, double temperature, int topK, float topP, bool greedy,
                                                         unsigned long long* rngState, int* token, int* errorCode, int* position, float* probs) {
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  // 1. checkLogits (the first NaN or +inf by id decides the message, as the CPU's scan does),
  //    and the argmax with ties to the lower id.
  int firstNaN = V, firstPositiveInf = V;
  bool anyFinite = false;
  ArgMax best{-INFINITY, V};
  for (int i = tid; i < V; i += kThreads) {
    const float l = logits[i];
    if (isnan(l)) {
      firstNaN = min(firstNaN, i);
    } else if (l == INFINITY) {
      firstPositiveInf = min(firstPositiveInf, i);
    } else {
      anyFinite = anyFinite || l != -INFINITY;
      if (best.id == V || l > best.value) best = ArgMax{l, i};
    }
  }
  firstNaN = blockMinInt(firstNaN);
  firstPositiveInf = blockMinInt(firstPositiveInf);
  anyFinite = __syncthreads_or(anyFinite);
  best = blockArgMax(best, V);
  const int error = firstNaN < firstPositiveInf ? kSampleNaN
                    : firstPositiveInf < V      ? kSamplePositiveInf
                    : !anyFinite                ? kSampleAllNegativeInf
                                                : kSampleOk;
  if (tid == 0) *errorCode = error;
  if (error != kSampleOk) return;
  if (greedy) {
    if (tid == 0) {
      *token = best.id;
      if (position) *position += 1;
    }
    return;
  }

  // 2. softmax(logits / temperature): w = expf(float((logit - max) / T)), the exponent in double as
  //    on the CPU; exp in double rounded to float (see the file comment); p = float(w / sum w).
  const double maxLogit = best.value;
  double sum = 0;
  for (int i = tid; i < V; i += kThreads) {
    const float exponent = static_cast<float>((static_cast<double>(logits[i]) - maxLogit) / temperature);
    const float w = static_cast<float>(exp(static_cast<double>(exponent)));
    probs[i] = w;
    sum += w;
  }
  sum = blockSumT(sum);  // >= 1: the max term is exp(0)
  for (int i = tid; i < V; i += kThreads) probs[i] = static_cast<float>(probs[i] / sum);

  // 3. top-k: exactly k ids by (logit desc, id asc), renormalised.
  if (topK > 0 && topK < V) {
    const Prefix topKPrefix = shortestPrefix(
        logits, V, [](int) { return 1ull; }, static_cast<unsigned long long>(topK));
    keepAndRenormalise(logits, probs, V, topKPrefix);
  }

  // 4. top-p: the shortest prefix whose mass reaches p - 1e-6, renormalised. Zero-probability ids
  //    never complete a prefix, as the CPU's walk stops at them.
  if (topP < 1.0f) {
    const double targetMass = (static_cast<double>(topP) - 1e-6) * kFixedOne;
    unsigned long long target = targetMass >= 1.0 ? static_cast<unsigned long long>(ceil(targetMass)) : 1ull;
    auto massOf = [probs](int i) { return toFixed(probs[i]); };
    unsigned long long total = 0;
    for (int i = tid; i < V; i += kThreads) total += massOf(i);
    total = blockSumT(total);
    // The total reaches p - 1e-6 except through underflow; then every token with mass stays.
    const Prefix topPPrefix = total >= target ? shortestPrefix(logits, V, massOf, target) : Prefix{0u, V};
    keepAndRenormalise(logits, probs, V, topPPrefix);
  }

  // 5. Inverse CDF in id order: the first id whose cumulative mass exceeds u * total, else the
  //    last id with any mass. Warp w owns ids [w seg, (w + 1) seg): warp sums, a scan of the 32
  //    sums, then the one warp holding the crossing scans its segment 32 ids at a time.
  __shared__ unsigned long long warpMass[kWarps];
  __shared__ unsigned long long drawTarget, crossingWarpBase;
  __shared__ int crossingWarp, drawnToken;
  __syncthreads();  // probs were written with the tid stride; the segments below read across threads
  const int segment = (V + kWarps * 32 - 1) / (kWarps * 32) * 32;
  const int segmentBegin = warp * segment, segmentEnd = min(V, segmentBegin + segment);
  unsigned long long mass = 0;
  int lastPossible = -1;
  for (int i = segmentBegin + lane; i < segmentEnd; i += 32) {
    mass += toFixed(probs[i]);
    if (probs[i] > 0.0f) lastPossible = i;
  }
  mass = warpSumT(mass);
  lastPossible = -blockMinInt(-lastPossible);
  if (lane == 0) warpMass[warp] = mass;
  __syncthreads();
  if (warp == 0) {
    const unsigned long long own = warpMass[lane];
    unsigned long long inclusive = own;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const unsigned long long lower = __shfl_up_sync(kFullMask, inclusive, offset);
      if (lane >= offset) inclusive += lower;
    }
    const unsigned long long total = __shfl_sync(kFullMask, inclusive, 31);
    double u = 0;
    if (lane == 0) {
      unsigned long long state[4] = {rngState[0], rngState[1], rngState[2], rngState[3]};
      u = rngUniform(state);
      for (int k = 0; k < 4; ++k) rngState[k] = state[k];
    }
    u = __shfl_sync(kFullMask, u, 0);
    const double scaled = floor(u * static_cast<double>(total));  // cumulative > u total  <=>  > floor(u total)
    const unsigned long long target = static_cast<unsigned long long>(scaled);
    const unsigned crossing = __ballot_sync(kFullMask, inclusive > target);
    if (lane == 0) {
      drawTarget = target;
      crossingWarp = crossing ? __ffs(crossing) - 1 : -1;
      drawnToken = lastPossible;
    }
    if (crossing && lane == __ffs(crossing) - 1) crossingWarpBase = inclusive - own;
  }
  __syncthreads();
  if (warp == crossingWarp) {
    unsigned long long running = crossingWarpBase;
    for (int base = segmentBegin; base < segmentEnd; base += 32) {
      const int i = base + lane;
      const unsigned long long own = i < segmentEnd ? toFixed(probs[i]) : 0ull;
      unsigned long long inclusive = own;
      for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned long long lower = __shfl_up_sync(kFullMask, inclusive, offset);
        if (lane >= offset) inclusive += lower;
      }
      const unsigned crossing = __ballot_sync(kFullMask, running + inclusive > drawTarget);
      if (crossing) {
        if (lane == __ffs(crossing) - 1) drawnToken = i;
        break;
      }
      running += __shfl_sync(kFullMask, inclusive, 31);
    }
  }
  __syncthreads();
  if (tid == 0) {
    *token = drawnToken;
    if (position) *position += 1;
  }
}

}  // namespace

size_t sampleScratchBytes(int V) { return (static_cast<size_t>(V > 0 ? V : 1) * sizeof(float) + 255) / 256 * 256; }

void launchSample(const float* logits, int V, float temperature, int topK, float topP, bool greedy, unsigned long long* rngState, int* token,
                  int* errorCode, int* positionToIncrement, void* scratch, cudaStream_t stream) {
  if (V <= 0) throw Error("logits are empty");
  sampleKernel<<<1, kThreads, 0, stream>>>(logits, V, static_cast<double>(temperature), topK, topP, greedy, rngState, token, errorCode,
                                           positionToIncrement, static_cast<float*>(scratch));
  TSCOPE_LAUNCH_CHECK();
}

const char* sampleErrorMessage(int errorCode) {
  switch (errorCode) {
    case kSampleNaN: return "logits contain NaN";
    case kSamplePositiveInf: return "logits contain +inf";
    case kSampleAllNegativeInf: return "logits are all -inf: no token is possible";
    default: return "";
  }
}

}  // namespace tscope::cuda
