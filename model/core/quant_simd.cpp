// The vectorised dot products of quantized rows (quant.h's dotRow, gemvRows, matmulFewRows): a
// tile of up to four weight rows by up to four input rows. Each weight block is decoded packet by
// packet into float32 registers (the codes widened to 32-bit lanes, converted, then scale * code -
// min by one multiply-add: exact, the values of quant.cpp's scalar decode), each weight packet is
// multiply-added against the R inputs and each input packet against the four weight rows. The
// kernels are written once over a small packet interface (AVX-512: 16 lanes, AVX2: 8) and built
// for whichever the compiler targets; a build with neither leaves the work to quant.cpp's scalar code.
// On one core these loops wait on the FMA unit and the integer decode, not on memory: about one
// multiply-add per weight per input row, as a BF16 row costs (quantizing x to int8 for integer dot
// products, as llama.cpp does, would go further at a cost in accuracy).
#include <algorithm>
#include <cstring>
#include <utility>

#include "model/core/quant_blocks.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports a false "(may be) used uninitialized" inside its own AVX-512 intrinsics (their
// _mm512_undefined_* operands) once inlined here; the build silences it for backend_cpu.cpp alike.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#define TSCOPE_QUANT_SIMD 1
#endif

namespace tscope::quant_detail {

#if defined(TSCOPE_QUANT_SIMD)
namespace {

// An fp16 block scale: F16C's one-instruction conversion where the build has it.
inline float blockHalf(const uint8_t* p) {
#if defined(__F16C__)
  return _cvtsh_ss(readU16(p));
#else
  return readHalf(p);
#endif
}

#if defined(__AVX512F__)
struct Packets {
  static constexpr int kLanes = 16;
  static constexpr const char* kName = "AVX-512";
  using F = __m512;
  using I = __m512i;
  // kLanes bytes at p widened to 32-bit lanes, zero- or sign-extended.
  static I bytes(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I signedBytes(const uint8_t* p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static I bitAnd(I a, int mask) { return _mm512_and_si512(a, _mm512_set1_epi32(mask)); }
  static I bitOr(I a, I b) { return _mm512_or_si512(a, b); }
  template <int n>
  static I shiftRight(I a) {
    return _mm512_srli_epi32(a, n);
  }
  template <int n>
  static I shiftLeft(I a) {
    return _mm512_slli_epi32(a, n);
  }
  static F toFloat(I a) { return _mm512_cvtepi32_ps(a); }
  static F set(float v) { return _mm512_set1_ps(v); }
  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F loadF16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F loadBf16(const uint8_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(F a) { return _mm512_reduce_add_ps(a); }
};
#else
struct Packets {
  static constexpr int kLanes = 8;
  static constexpr const char* kName = "AVX2";
  using F = __m256;
  using I = __m256i;
  static I bytes(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static I signedBytes(const uint8_t* p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static I bitAnd(I a, int mask) { return _mm256_and_si256(a, _mm256_set1_epi32(mask)); }
  static I bitOr(I a, I b) { return _mm256_or_si256(a, b); }
  template <int n>
  static I shiftRight(I a) {
    return _mm256_srli_epi32(a, n);
  }
  template <int n>
  static I shiftLeft(I a) {
    return _mm256_slli_epi32(a, n);
  }
  static F toFloat(I a) { return _mm256_cvtepi32_ps(a); }
  static F set(float v) { return _mm256_set1_ps(v); }
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F loadF16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F loadBf16(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(F a) {
    const __m128 half = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 pairs = _mm_add_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehdup_ps(pairs)));
  }
};
#endif

using P = Packets;
using F = P::F;
using I = P::I;
constexpr int L = P::kLanes;

// The kernels' lambdas are always inlined (TSCOPE_INLINE): a large tile exceeds GCC's inlining
// limits, and a call not inlined keeps its captured accumulators in memory (ten times slower).
#define TSCOPE_INLINE __attribute__((always_inline))

// fn(std::integral_constant<int, i>{}) for i = 0..N-1, written out: packet offsets, rows and
// accumulator indices are then constants, so the accumulators stay in registers.
template <int N, class Fn>
TSCOPE_INLINE inline void unrolled(Fn&& fn) {
  [&]<int... i>(std::integer_sequence<int, i...>) TSCOPE_INLINE { (fn(std::integral_constant<int, i>{}), ...); }
  (std::make_integer_sequence<int, N>{});
}

// out[i] = factor * byte i of `bytes` (unsigned, little-endian) for i < 8 (AVX2, which both paths have).
TSCOPE_INLINE inline void scaleBytes(uint64_t bytes, float factor, float* out) {
  const __m256 values = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(bytes))));
  _mm256_storeu_ps(out, _mm256_mul_ps(values, _mm256_set1_ps(factor)));
}

// a shifted left by s bits (right by -s when s < 0).
template <int s>
TSCOPE_INLINE inline I shifted(I a) {
  if constexpr (s >= 0) return P::shiftLeft<s>(a);
  else return P::shiftRight<-s>(a);
}

// Each format's decoder: load(block) reads one block's scales; packet<p>() decodes its packet p, the
// kLanes weights from p * kLanes on, as scale * code - min by one multiply-add (exact, as in
// quant.cpp's scalar decode). kValues weights in kBytes bytes per block.
struct Q8_0Decoder {
  static constexpr int kValues = 32, kBytes = 34;
  const uint8_t* q;
  F d;
  TSCOPE_INLINE void load(const uint8_t* block) { q = block + kQ8_0Qs, d = P::set(blockHalf(block)); }
  template <int p>
  TSCOPE_INLINE F packet() const {
    return P::mul(P::toFloat(P::signedBytes(q + p * L)), d);
  }
};

// Q4_0: weight j < 16 the low nibble of byte j, weight 16 + j its high nibble; d * (q - 8).
struct Q4_0Decoder {
  static constexpr int kValues = 32, kBytes = 18;
  const uint8_t* q;
  F scale, offset;
  TSCOPE_INLINE void load(const uint8_t* block) {
    const float d = blockHalf(block);
    q = block + kQ4_0Qs, scale = P::set(d), offset = P::set(-8 * d);  // d*q - 8d: exact either way
  }
  template <int p>
  TSCOPE_INLINE F packet() const {
    constexpr int first = p * L;
    const I bytes = P::bytes(q + first % 16);
    return P::fma(P::toFloat(first < 16 ? P::bitAnd(bytes, 0xF) : P::shiftRight<4>(bytes)), scale, offset);
  }
};

// Q4_K and Q5_K (kHigh: Q5_K's fifth bits): weight w of 64-weight chunk c = w / 64 is a nibble of
// qs[32c + w % 32], low in the chunk's first 32 (sub-block 2c) and high in its last (2c + 1), and
// Q5_K's bit 2c or 2c + 1 of qh[w % 32] adds 16; d*sc * q - dmin*m per sub-block.
template <bool kHigh>
struct QK45Decoder {
  static constexpr int kValues = 256, kBytes = kHigh ? 176 : 144;
  const uint8_t* block;
  float scale[8], offset[8];  // broadcast where used: held as packets they would crowd out the sums
  TSCOPE_INLINE void load(const uint8_t* b) {
    block = b;
    // scaleMinK4 for all eight at once, on the 12 bytes as three little-endian words w0 w1 w2: scales
    // 0-3 are w0's bytes' low 6 bits, mins 0-3 w1's; scales 4-7 w2's low nibbles under the top 2
    // bits of w0's bytes, mins 4-7 w2's high nibbles under those of w1's. (Unpacking them one by
    // one took as long as the rest of the block.)
    uint32_t w[3];
    std::memcpy(w, b + kQ4KScales, sizeof w);
    const uint64_t scales = (w[0] & 0x3f3f3f3fu) | static_cast<uint64_t>((w[2] & 0x0f0f0f0fu) | ((w[0] >> 2) & 0x30303030u)) << 32;
    const uint64_t mins = (w[1] & 0x3f3f3f3fu) | static_cast<uint64_t>(((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 2) & 0x30303030u)) << 32;
    scaleBytes(scales, blockHalf(b), scale);
    scaleBytes(mins, -blockHalf(b + 2), offset);  // -(dmin * m): the same product, negated
  }
  template <int p>
  TSCOPE_INLINE F packet() const {
    constexpr int first = p * L, sub = first / 32, l = first % 32;  // sub-block 2c + (high nibbles)
    const I bytes = P::bytes(block + (kHigh ? kQ5KQs : kQ4KQs) + 32 * (sub / 2) + l);
    I code = sub % 2 ? P::shiftRight<4>(bytes) : P::bitAnd(bytes, 0xF);
    if constexpr (kHigh) code = P::bitOr(code, P::bitAnd(shifted<4 - sub>(P::bytes(block + kQ5KQh + l)), 16));  // bit `sub` of qh[l] as 16
    return P::fma(P::toFloat(code), P::set(scale[sub]), P::set(offset[sub]));
  }
};

// Q6_K: in half h (128 weights: ql + 64h, qh + 32h), weight l + 32k (l < 32) is the low (k < 2) or
// high nibble of ql[l + 32 (k % 2)] with bits 2k, 2k+1 of qh[l] above it; (q - 32) * d*sc[w / 16].
struct Q6KDecoder {
  static constexpr int kValues = 256, kBytes = 210;
  const uint8_t* block;
  float scale[16], offset[16];  // d * sc and -32 * d * sc per 16 weights: (q - 32) * s = q*s - 32s, exact
  TSCOPE_INLINE void load(const uint8_t* b) {
    block = b;
    const __m256 d = _mm256_set1_ps(blockHalf(b + kQ6KD));
    for (int half = 0; half < 2; ++half) {  // the 16 int8 scales, eight at a time
      const __m256 sc =
          _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + kQ6KScales + 8 * half)))), d);
      _mm256_storeu_ps(scale + 8 * half, sc);
      _mm256_storeu_ps(offset + 8 * half, _mm256_mul_ps(sc, _mm256_set1_ps(-32.0f)));
    }
  }
  template <int p>
  TSCOPE_INLINE F packet() const {
    constexpr int first = p * L, half = first / 128, k = first % 128 / 32, l = first % 32;
    const I bytes = P::bytes(block + kQ6KQl + 64 * half + 32 * (k % 2) + l), high = P::bytes(block + kQ6KQh + 32 * half + l);
    const I code = P::bitOr(k < 2 ? P::bitAnd(bytes, 0xF) : P::shiftRight<4>(bytes), P::bitAnd(shifted<4 - 2 * k>(high), 0x30));
    return P::fma(P::toFloat(code), P::set(scale[first / 16]), P::set(offset[first / 16]));
  }
};

// The float types, one packet per "block"; floatTile adds a row's last values % kLanes.
template <WeightType type>
struct FloatDecoder {
  static constexpr int kValues = L, kBytes = type == WeightType::F32 ? 4 * L : 2 * L;
  const uint8_t* w;
  TSCOPE_INLINE void load(const uint8_t* block) { w = block; }
  template <int p>
  TSCOPE_INLINE F packet() const {
    if constexpr (type == WeightType::F32) return P::load(reinterpret_cast<const float*>(w));
    else if constexpr (type == WeightType::F16) return P::loadF16(w);
    else return P::loadBf16(w);
  }
};

// sums[r][j] = rows[j] . (x + r * stride) over `blocks` blocks, for NW weight rows and R input rows:
// each x packet is loaded once for the NW rows (a packet of x is 64 bytes against 16 of Q8_0
// weights: loading it per row made x, not the weights, the bottleneck) and each weight packet
// decoded once for the R inputs. C independent sums per pair keep four multiply-adds in flight
// (each waits 4 cycles for the one before into the same sum). The sums restart each kChunkValues
// weights and are then added to the running total (short sums per lane: better accuracy).
template <class Decoder, int NW, int R>
void tile(const uint8_t* const* rows, const float* x, int64_t stride, int64_t blocks, float (*sums)[4]) {
  constexpr int C = std::max(1, 4 / (NW * R)), kPackets = Decoder::kValues / L, kPerChunk = std::max(1, kChunkValues / Decoder::kValues);
  F total[R][NW], part[C][R][NW];
  unrolled<R>([&](auto r) TSCOPE_INLINE { unrolled<NW>([&](auto j) TSCOPE_INLINE { total[r][j] = P::zero(); }); });
  Decoder decoder[NW];
  for (int64_t b0 = 0; b0 < blocks; b0 += kPerChunk) {
    unrolled<C * R * NW>([&](auto i) TSCOPE_INLINE { part[i / (R * NW)][i / NW % R][i % NW] = P::zero(); });
    const int64_t b1 = std::min(blocks, b0 + kPerChunk);
    for (int64_t b = b0; b < b1; ++b) {
      unrolled<NW>([&](auto j) TSCOPE_INLINE { decoder[j].load(rows[j] + b * Decoder::kBytes); });
      const float* xb = x + b * Decoder::kValues;
      unrolled<kPackets>([&](auto p) TSCOPE_INLINE {
        F w[NW];
        unrolled<NW>([&](auto j) TSCOPE_INLINE { w[j] = decoder[j].template packet<p>(); });
        unrolled<R>([&](auto r) TSCOPE_INLINE {
          const F xv = P::load(xb + r * stride + p * L);
          unrolled<NW>([&](auto j) TSCOPE_INLINE { part[p % C][r][j] = P::fma(w[j], xv, part[p % C][r][j]); });
        });
      });
    }
    unrolled<R * NW>([&](auto i) TSCOPE_INLINE {
      F chunk = part[0][i / NW][i % NW];
      unrolled<C - 1>([&](auto c) TSCOPE_INLINE { chunk = P::add(chunk, part[c + 1][i / NW][i % NW]); });
      total[i / NW][i % NW] = P::add(total[i / NW][i % NW], chunk);
    });
  }
  unrolled<R * NW>([&](auto i) TSCOPE_INLINE { sums[i / NW][i % NW] = P::sum(total[i / NW][i % NW]); });
}

// A float type's rows: whole packets by tile, the last values % kLanes one by one.
template <WeightType type, int NW, int R>
void floatTile(const uint8_t* const* rows, const float* x, int64_t stride, int64_t values, float (*sums)[4]) {
  const int64_t packets = values / L;
  tile<FloatDecoder<type>, NW, R>(rows, x, stride, packets, sums);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NW; ++j)
      for (int64_t i = packets * L; i < values; ++i) {
        float w;
        if constexpr (type == WeightType::F32) std::memcpy(&w, rows[j] + 4 * i, sizeof w);
        else w = type == WeightType::F16 ? halfToFloat(readU16(rows[j] + 2 * i)) : bfloat16ToFloat(readU16(rows[j] + 2 * i));
        sums[r][j] += w * x[r * stride + i];
      }
}

template <int NW, int R>
void typedTile(WeightType type, const uint8_t* const* rows, const float* x, int64_t stride, int64_t values, float (*sums)[4]) {
  const int64_t blocks = values / weightTypeInfo(type).blockValues;
  switch (type) {
    case WeightType::F32: floatTile<WeightType::F32, NW, R>(rows, x, stride, values, sums); return;
    case WeightType::F16: floatTile<WeightType::F16, NW, R>(rows, x, stride, values, sums); return;
    case WeightType::BF16: floatTile<WeightType::BF16, NW, R>(rows, x, stride, values, sums); return;
    case WeightType::Q8_0: tile<Q8_0Decoder, NW, R>(rows, x, stride, blocks, sums); return;
    case WeightType::Q4_0: tile<Q4_0Decoder, NW, R>(rows, x, stride, blocks, sums); return;
    case WeightType::Q4_K: tile<QK45Decoder<false>, NW, R>(rows, x, stride, blocks, sums); return;
    case WeightType::Q5_K: tile<QK45Decoder<true>, NW, R>(rows, x, stride, blocks, sums); return;
    case WeightType::Q6_K: tile<Q6KDecoder, NW, R>(rows, x, stride, blocks, sums); return;
  }
}

template <int NW>
void tileOf(WeightType type, const uint8_t* const* rows, const float* x, int64_t stride, int R, int64_t values, float (*sums)[4]) {
  switch (R) {
    case 1: typedTile<NW, 1>(type, rows, x, stride, values, sums); return;
    case 2: typedTile<NW, 2>(type, rows, x, stride, values, sums); return;
    case 3: typedTile<NW, 3>(type, rows, x, stride, values, sums); return;
    default: typedTile<NW, 4>(type, rows, x, stride, values, sums); return;
  }
}

}  // namespace

bool simdTile(WeightType type, const uint8_t* const* rows, int count, const float* x, int64_t xStride, int R, int64_t values, float* out,
              int64_t outStride) {
  float sums[4][4] = {};
  if (count >= 4) {
    tileOf<4>(type, rows, x, xStride, R, values, sums);
  } else {
    for (int j = 0; j < count; ++j) {  // fewer rows: one at a time, with more sums in flight each
      float one[4][4] = {};
      tileOf<1>(type, rows + j, x, xStride, R, values, one);
      for (int r = 0; r < R; ++r) sums[r][j] = one[r][0];
    }
  }
  for (int r = 0; r < std::min(R, 4); ++r)
    for (int j = 0; j < std::min(count, 4); ++j) out[r * outStride + j] = sums[r][j];
  return true;
}

const char* simdPathName() { return Packets::kName; }

#else  // neither AVX-512 nor AVX2 with FMA and F16C: quant.cpp's scalar kernels

bool simdTile(WeightType, const uint8_t* const*, int, const float*, int64_t, int, int64_t, float*, int64_t) { return false; }
const char* simdPathName() { return "scalar"; }

#endif

}  // namespace tscope::quant_detail
