// llama2.c checkpoints (llama2c.h), written from karpathy/llama2.c: export.py (legacy_export,
// version1_export, version2_export and quantize_q80), run.c (read_checkpoint, memory_map_weights,
// forward) and runq.c (its header and init_quantized_tensors: each matrix's int8 values, then its
// scales). Every header field is checked before the file size is computed from them, and the size
// before anything is allocated, so a header cannot ask for more memory than the file holds.
#include "model/io/llama2c.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "model/core/error.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/hf_shards.h"
#include "model/io/safetensors.h"

namespace tscope {

namespace {

constexpr uint32_t kMagic = 0x616b3432;  // "ak42" read as a little-endian uint32 (export.py)
constexpr size_t kLegacyHeaderBytes = 7 * sizeof(int32_t), kHeaderBytes = 256;

struct Header {
  int version = 0;  // 0 legacy, 1 float32, 2 int8 Q8_0
  int64_t dim = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0, vocab = 0, seqLen = 0;
  bool shared = true;     // the classifier is the token embedding
  int64_t groupSize = 0;  // version 2: values per scale
  size_t bodyOffset = 0;
};

int32_t int32At(const uint8_t* bytes, size_t pos) {
  int32_t value;
  std::memcpy(&value, bytes + pos, sizeof value);
  return value;
}

// The header from the file's first `available` bytes (all of them, or its first 256).
Header readHeader(const std::string& name, const uint8_t* bytes, size_t available) {
  Header h;
  if (available < sizeof(uint32_t)) throw Error(name + ": truncated llama2.c checkpoint (" + std::to_string(available) + " bytes)");
  size_t fields = 0;
  if (static_cast<uint32_t>(int32At(bytes, 0)) == kMagic) {
    if (available < kHeaderBytes)
      throw Error(name + ": truncated llama2.c checkpoint (" + std::to_string(available) + " bytes, its header needs 256)");
    h.version = int32At(bytes, 4);
    if (h.version != 1 && h.version != 2)
      throw Error(name + ": llama2.c checkpoint version " + std::to_string(h.version) + " is not supported (1: float32, 2: int8 Q8_0)");
    fields = 8;
    const uint8_t shared = bytes[36];
    if (shared > 1) throw Error(name + ": header: shared_classifier is " + std::to_string(shared) + " (0 or 1 expected)");
    h.shared = shared == 1;
    if (h.version == 2) h.groupSize = int32At(bytes, 37);  // right after the flag byte, unaligned (export.py packs it so)
    h.bodyOffset = kHeaderBytes;
  } else {
    if (available < kLegacyHeaderBytes)
      throw Error(name + ": truncated llama2.c checkpoint (" + std::to_string(available) + " bytes, its header needs 28)");
    h.bodyOffset = kLegacyHeaderBytes;
  }
  int64_t* const targets[7] = {&h.dim, &h.hidden, &h.layers, &h.heads, &h.kvHeads, &h.vocab, &h.seqLen};
  for (int i = 0; i < 7; ++i) *targets[i] = int32At(bytes, fields + 4 * i);
  if (h.version == 0) {  // run.c: a negative vocab_size marks an unshared classifier
    h.shared = h.vocab > 0;
    h.vocab = std::llabs(h.vocab);
  }
  return h;
}

// "" when every field is in range and the shapes fit together, else one line naming the field.
std::string headerProblem(const Header& h) {
  const std::pair<const char*, int64_t> sizes[] = {{"dim", h.dim},       {"hidden_dim", h.hidden},  {"n_layers", h.layers},
                                                   {"n_heads", h.heads}, {"n_kv_heads", h.kvHeads}, {"vocab_size", h.vocab},
                                                   {"seq_len", h.seqLen}};
  for (const auto& [field, value] : sizes)
    if (value <= 0) return field + std::string(" is ") + std::to_string(value) + " (it must be positive)";
  const std::pair<const char*, int64_t> limits[] = {{"dim", 65536},       {"hidden_dim", 1 << 20}, {"n_layers", 1024},  {"n_heads", 1024},
                                                    {"n_kv_heads", 1024}, {"vocab_size", 1 << 22}, {"seq_len", 1 << 20}};
  for (size_t i = 0; i < 7; ++i)
    if (sizes[i].second > limits[i].second)
      return std::string(sizes[i].first) + " is " + std::to_string(sizes[i].second) + ", more than tscope reads (" +
             std::to_string(limits[i].second) + ")";
  if (h.dim % h.heads != 0) return "n_heads " + std::to_string(h.heads) + " does not divide dim " + std::to_string(h.dim);
  if (h.heads % h.kvHeads != 0) return "n_kv_heads " + std::to_string(h.kvHeads) + " does not divide n_heads " + std::to_string(h.heads);
  if ((h.dim / h.heads) % 2 != 0) return "the head size dim / n_heads = " + std::to_string(h.dim / h.heads) + " is odd (RoPE rotates pairs)";
  if (h.version == 2 && (h.groupSize <= 0 || h.groupSize > (1 << 20)))
    return "group size " + std::to_string(h.groupSize) + " is out of range (1..1048576)";
  return "";
}

// Where each tensor lies: `count` tensors (one per layer, or one) of (rows, cols) values.
enum class Role { Embedding, AttentionNorm, FfnNorm, FinalNorm, Wq, Wk, Wv, Wo, W1, W2, W3, Classifier, RopeTables };
struct Block {
  Role role;
  int64_t count, rows, cols;
  bool quantized = false;  // version 2's matrices: int8 values, then one float32 scale per group
  int64_t numel() const { return rows * cols; }
  uint64_t itemBytes(int64_t group) const { return quantized ? numel() + numel() / group * 4 : numel() * 4; }
};

std::vector<Block> fileBlocks(const Header& h) {
  const int64_t L = h.layers, C = h.dim, F = h.hidden, V = h.vocab, D = h.dim / h.heads, KV = h.kvHeads * D;
  const bool q = h.version == 2;
  const Block embedding{Role::Embedding, 1, V, C, q}, attentionNorm{Role::AttentionNorm, L, 1, C}, ffnNorm{Role::FfnNorm, L, 1, C},
      finalNorm{Role::FinalNorm, 1, 1, C}, classifier{Role::Classifier, 1, V, C, q};
  const Block attention[4] = {{Role::Wq, L, C, C, q}, {Role::Wk, L, KV, C, q}, {Role::Wv, L, KV, C, q}, {Role::Wo, L, C, C, q}};
  const Block ffn[3] = {{Role::W1, L, F, C, q}, {Role::W2, L, C, F, q}, {Role::W3, L, F, C, q}};
  std::vector<Block> blocks;
  if (h.version == 0) {
    blocks = {embedding, attentionNorm, attention[0], attention[1], attention[2], attention[3], ffnNorm, ffn[0], ffn[1], ffn[2], finalNorm};
    blocks.push_back({Role::RopeTables, 2, h.seqLen, D / 2});
  } else {
    blocks = {attentionNorm, ffnNorm, finalNorm, embedding, attention[0], attention[1], attention[2], attention[3], ffn[0], ffn[1], ffn[2]};
  }
  if (!h.shared) blocks.push_back(classifier);
  return blocks;
}

uint64_t expectedBytes(const Header& h) {
  uint64_t total = h.bodyOffset;
  for (const Block& b : fileBlocks(h)) total += static_cast<uint64_t>(b.count) * b.itemBytes(h.groupSize);
  return total;
}

// The header checked, and the file size against it.
Header checkedHeader(const std::string& name, const uint8_t* bytes, size_t size) {
  const Header h = readHeader(name, bytes, size);
  const std::string what = h.version == 0 ? "llama2.c" : "llama2.c version " + std::to_string(h.version);
  if (std::string problem = headerProblem(h); !problem.empty()) throw Error(name + ": " + what + " header: " + problem);
  if (h.version == 2)
    for (const Block& b : fileBlocks(h))
      if (b.quantized && b.numel() % h.groupSize != 0)
        throw Error(name + ": " + what + " header: group size " + std::to_string(h.groupSize) + " does not divide a " + std::to_string(b.rows) +
                    " x " + std::to_string(b.cols) + " matrix");
  if (const uint64_t expected = expectedBytes(h); size != expected)
    throw Error(name + ": " + what + " header says " + std::to_string(h.layers) + " layers of dim " + std::to_string(h.dim) + " (hidden_dim " +
                std::to_string(h.hidden) + ", " + std::to_string(h.heads) + " heads, " + std::to_string(h.kvHeads) + " kv heads, vocab " +
                std::to_string(h.vocab) + (h.shared ? "" : ", unshared classifier") + ") but the file has " + std::to_string(size) + " bytes, " +
                std::to_string(expected) + " expected");
  return h;
}

ModelConfig configOf(const Header& h) {
  ModelConfig c;
  c.position_encoding = PositionEncoding::Rope;
  c.norm = NormKind::RmsNorm;
  c.activation = Activation::SwiGlu;
  c.pre_norm = true;
  c.n_embd = static_cast<int>(h.dim);
  c.d_ff = static_cast<int>(h.hidden);
  c.n_layer = static_cast<int>(h.layers);
  c.n_head = static_cast<int>(h.heads);
  c.n_kv_head = static_cast<int>(h.kvHeads);
  c.vocab_size = static_cast<int>(h.vocab);
  c.n_positions = static_cast<int>(std::min<int64_t>(h.seqLen, kHfContextCap));  // KV caches are sized by it
  c.layer_norm_epsilon = 1e-5;                                                   // run.c's rmsnorm
  c.position_base = 10000;
  c.tie_word_embeddings = h.shared;
  return c;
}

// The tscope parameter a tensor goes to ("" for RoPE's tables), and whether it is copied as it is
// stored (embeddings, norms) rather than transposed.
std::string paramOf(Role role, int64_t layer, bool& copy) {
  const std::string p = "h." + std::to_string(layer) + ".";
  copy = true;
  switch (role) {
    case Role::Embedding: return "wte.weight";
    case Role::Classifier: return "lm_head.weight";
    case Role::FinalNorm: return "ln_f.weight";
    case Role::AttentionNorm: return p + "ln_1.weight";
    case Role::FfnNorm: return p + "ln_2.weight";
    case Role::RopeTables: return "";
    default: break;
  }
  copy = false;
  switch (role) {
    case Role::Wq:
    case Role::Wk:
    case Role::Wv: return p + "attn.c_attn.weight";
    case Role::Wo: return p + "attn.c_proj.weight";
    case Role::W1: return p + "mlp.c_gate.weight";
    case Role::W3: return p + "mlp.c_fc.weight";
    default: return p + "mlp.c_proj.weight";  // W2
  }
}

// Q8_0 as runq.c's dequantize: value = q * scale of its group (the scales may be unaligned).
void dequantize(const uint8_t* at, int64_t n, int64_t group, std::vector<float>& out) {
  out.resize(n);
  const auto* q = reinterpret_cast<const int8_t*>(at);
  std::vector<float> scales(n / group);
  std::memcpy(scales.data(), at + n, scales.size() * sizeof(float));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(q[i]) * scales[i / group];
}

}  // namespace

bool looksLikeLlama2c(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return false;
  uint8_t head[kHeaderBytes] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head), sizeof head);
  const size_t got = static_cast<size_t>(in.gcount());
  if (got >= 4 && static_cast<uint32_t>(int32At(head, 0)) == kMagic) return true;
  try {
    const Header h = readHeader(path, head, got);
    return h.version == 0 && headerProblem(h).empty() && expectedBytes(h) == size;
  } catch (const Error&) {
    return false;
  }
}

Weights loadLlama2cCheckpoint(const std::string& path, const LoadProgress& progress) {
  auto mapping = std::make_shared<const MappedFile>(path);
  return llama2cCheckpointFromBytes(path, mapping->data(), mapping->size(), mapping, progress);
}

Weights llama2cCheckpointFromBytes(const std::string& name, const uint8_t* bytes, size_t size, std::shared_ptr<const MappedFile> mapping,
                                   const LoadProgress& progress) {
  const Header h = checkedHeader(name, bytes, size);
  const ModelConfig config = configOf(h);
  if (auto msg = validateConfig(config); !msg.empty()) throw Error(name + ": llama2.c header: " + msg);
  const std::vector<Block> blocks = fileBlocks(h);
  // Where every tensor starts. Float32 tensors start at multiples of 4 from a 4-byte aligned start.
  struct Item {
    const Block* block;
    int64_t layer;
    const uint8_t* at;
  };
  std::vector<Item> items;
  const uint8_t* cursor = bytes + h.bodyOffset;
  for (const Block& b : blocks)
    for (int64_t i = 0; i < b.count; ++i, cursor += b.itemBytes(h.groupSize)) items.push_back({&b, i, cursor});
  // Float32 embeddings and norms are stored as tscope holds them: read in place from the mapping.
  std::map<std::string, const float*> stored;
  for (const Item& item : items) {
    bool copy = false;
    const std::string param = paramOf(item.block->role, item.layer, copy);
    if (copy && !param.empty() && !item.block->quantized) stored[param] = reinterpret_cast<const float*>(item.at);
  }
  const std::vector<ParamSpec> layout = parameterLayout(config);
  std::vector<const float*> inPlace;
  for (const ParamSpec& spec : layout) {
    const auto it = stored.find(spec.name);
    inPlace.push_back(mapping && it != stored.end() ? it->second : nullptr);
  }
  Weights weights(config, mapping, inPlace);
  std::map<std::string, int64_t> widthOf;  // the columns of each tscope matrix
  for (const ParamSpec& spec : layout) widthOf[spec.name] = spec.shape.back();
  const int64_t A = h.dim, KV = h.kvHeads * (h.dim / h.heads);
  std::vector<float> buffer;
  int done = 0;
  for (const Item& item : items) {
    const Block& b = *item.block;
    if (progress) progress(++done, static_cast<int>(items.size()));
    bool copy = false;
    const std::string param = paramOf(b.role, item.layer, copy);
    if (param.empty() || (copy && weights.readsInPlace(param))) continue;
    const float* src = reinterpret_cast<const float*>(item.at);
    if (b.quantized) {
      dequantize(item.at, b.numel(), h.groupSize, buffer);
      src = buffer.data();
    }
    float* dst = weights.convertedParam(param);
    if (copy) {
      std::memcpy(dst, src, static_cast<size_t>(b.numel()) * sizeof(float));
      continue;
    }
    const int64_t column = b.role == Role::Wk ? A : b.role == Role::Wv ? A + KV : 0;  // c_attn's columns: Q | K | V
    hf::placeTransposed(dst, widthOf.at(param), hf::Placement{"", param, {b.rows, b.cols}, false, column, false}, src, config.headDim());
    if (mapping) mapping->releasePages(item.at, b.itemBytes(h.groupSize));
  }
  return weights;
}

}  // namespace tscope
