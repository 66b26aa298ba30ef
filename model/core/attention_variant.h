// The efficient-attention variants by name, with their knobs and the rules those obey: what a
// model's config.json (`attention_variant`), tscope-cli's flags and session files name. Plain data
// and validation only; the ops themselves are in model/nn/efficient_attention.h.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tscope {

enum class AttentionVariant { Exact, Flash, Window, Lsh, Linformer, Linear, Performer };

// "exact", "flash", "window", "lsh", "linformer", "linear", "performer" (the config.json and CLI names).
const char* attentionVariantName(AttentionVariant variant);
std::optional<AttentionVariant> attentionVariantFromName(std::string_view name);
std::vector<AttentionVariant> allAttentionVariants();  // in the order above
bool isExactVariant(AttentionVariant variant);         // exact, flash (window is exact for its own mask only: false)

// Linformer's fixed projection along the sequence. Pool: E = F = segment means (row r averages the
// tokens of segment r of the n tokens cut into k near-equal contiguous segments), so k = n is the
// identity and Linformer there is exact attention. Gaussian: the paper's Johnson-Lindenstrauss
// projection, E and F ~ N(0, 1/k), which does not converge to exact attention as k grows to n.
enum class LinformerProjection { Pool, Gaussian };
const char* linformerProjectionName(LinformerProjection projection);  // "pool", "gaussian"
std::optional<LinformerProjection> linformerProjectionFromName(std::string_view name);

// The knobs of every variant (each variant reads only its own).
struct AttentionVariantParams {
  AttentionVariant variant = AttentionVariant::Exact;
  int tile = 64;       // flash: rows of a query tile (Br) and of a key/value tile (Bc)
  int window = 64;     // window: a query at i sees keys j with i - window < j <= i (causal) or |i - j| < window
  int buckets = 8;     // lsh: b random directions r_1..r_b; h(x) = argmax_i x.r_i
  int rounds = 1;      // lsh: independent hashing rounds; a query attends to the union of its buckets' keys
  int chunk = 64;      // lsh: chunk length of the sorted order; a query sees its own and the previous chunk
  int projected = 64;  // linformer: k, the rows K and V are projected to along the sequence
  int features = 64;   // performer: m random features
  uint64_t seed = 1;   // lsh directions, linformer's Gaussian projection, performer's features
  LinformerProjection linformerProjection = LinformerProjection::Pool;  // linformer's fixed E and F
  // Linformer with learned projections: E and F (projected, n) row-major, n = the sequence length
  // they were trained for (the first n' columns are used for a shorter sequence). Null = the fixed
  // projection `linformerProjection`.
  const float* linformerE = nullptr;
  const float* linformerF = nullptr;
  // n of E and F when given. With the Pool projection: > 0 cuts the k segments from this many
  // columns (a shorter sequence uses its first n: segments past n are empty and masked, the one n
  // ends in is partial), so a token's output does not depend on the sequence length; 0 = n.
  int linformerColumns = 0;
};
// Every knob equal (E and F by address). Not a defaulted member: nvcc compiles this header as C++17.
bool operator==(const AttentionVariantParams& a, const AttentionVariantParams& b);

// The integer knobs by name (tscope-cli's flags and the session file's fields, e.g. "tile"), the
// variant that reads each and its member: the one list every reader and writer of knobs walks.
struct AttentionKnob {
  const char* name;
  AttentionVariant variant;
  using Member = int AttentionVariantParams::*;  // (a named type: nvcc's host pass misreads the plain declarator)
  Member member;
};
const std::vector<AttentionKnob>& attentionKnobs();

// The knobs params.variant reads, by name, e.g. {"tile": 64} for flash, {} for exact and linear;
// linformer adds its projection ("pool" / "gaussian"), and the variants with random draws their
// seed: config.json's "attention_variant_knobs" and the CLI's records.
nlohmann::json attentionVariantKnobsJson(const AttentionVariantParams& params);

// Checks the knobs of params.variant for a sequence of n tokens: "" when valid, else one line
// naming the bad knob and its range (e.g. "lsh buckets must be 1 .. 1024, not 0").
std::string attentionVariantProblem(const AttentionVariantParams& params, int n);

}  // namespace tscope
