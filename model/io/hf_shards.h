// What every HuggingFace checkpoint reader shares (hf_checkpoint.cpp: the Llama family; hf_bert.cpp:
// BERT): config.json helpers, the shards of a model directory, and the plan of placements that puts
// HF tensors into tscope's layout (transposed, fused into c_attn, RoPE-reordered, or kept as halves).
// Internal to model/io/.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/core/json_field.h"
#include "model/core/weights.h"
#include "model/io/load_progress.h"
#include "model/io/safetensors.h"

namespace tscope::hf {

// config.json's first `architectures` entry, its `model_type` ("" when absent or not a string).
std::string architectureOf(const nlohmann::json& j);
std::string modelTypeOf(const nlohmann::json& j);
bool isNull(const nlohmann::json& j, const char* key);

// Reads an optional field that may also be null (HF writes null for "not set").
template <class T>
bool readOptional(const nlohmann::json& j, const char* key, T& out, const std::string& where = "config.json") {
  if (isNull(j, key)) return false;
  readField(j, key, out, where);
  return true;
}

// Where each stored tensor lives: one SafetensorsFile per shard (model.safetensors, or those
// model.safetensors.index.json lists), opened once.
class ShardSet {
 public:
  explicit ShardSet(const std::filesystem::path& dir);
  bool has(const std::string& name) const { return where_.count(name) != 0; }
  const SafetensorsFile& fileOf(const std::string& name) const { return *where_.at(name); }
  const std::map<std::string, const SafetensorsFile*>& tensors() const { return where_; }
  std::string anyPath() const { return files_.empty() ? "" : files_.begin()->first; }

 private:
  SafetensorsFile& open(const std::filesystem::path& path);
  void readIndex(const std::filesystem::path& dir, const std::filesystem::path& index);
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
};

std::string shapeText(const std::vector<int64_t>& shape);

// One stored tensor and where it goes: rows [0, rows) of the (out, in) HF matrix (a bias is
// (out, 1)) become columns [column, column + rows) of the (in, width) tscope matrix, source row
// rowOrder[j] into column + j. `copy` tensors keep their layout (embeddings, norms).
struct Placement {
  std::string hfName;
  std::string param;
  std::vector<int64_t> shape;  // as HF stores it
  bool copy = false;
  int64_t column = 0;
  bool ropeOrder = false;  // q and k: the rows of each head reordered for tscope's RoPE pairs
  // Kept as float32, never as halves: a (1, n) matrix read as tscope's float vector (n), or a
  // matrix the reader changes after loading (BERT's position table).
  bool floatVector = false;
};

// Whether the placement is a matrix a 16-bit (or GGUF) checkpoint keeps packed (PackedMatrix).
bool isPackedMatrix(const Placement& p);
// The HF row that tscope's column j of a head's D-wide block reads (rotate_half's pairs (i, i + D/2)
// to tscope's (2i, 2i + 1)).
int64_t ropeSourceRow(int64_t j, int64_t D);
// `src`, the (rows, in) matrix p.shape row-major, into columns [p.column, p.column + rows) of `dst`
// (in, width): HF's (out, in) transposed into tscope's (in, out), q/k rows in RoPE order (heads of D).
void placeTransposed(float* dst, int64_t width, const Placement& p, const float* src, int64_t D);

// The plan of a Llama-family config.json (hf_checkpoint.cpp) for `config` (hfLlamaConfig's), and the
// stored tensors it leaves out on purpose (RoPE's inv_freq buffers, a tied model's lm_head copy).
std::vector<Placement> llamaFamilyPlan(const ModelConfig& config, const nlohmann::json& hfConfig);
bool llamaFamilyIgnores(const std::string& tensorName, const ModelConfig& config);

// Every tensor of `plan` checked in `shards` (present, its shape) before anything is allocated, every
// stored tensor neither planned nor `ignored` refused as unexpected (for an `architecture`), then the
// weights of `config` placed: a checkpoint whose matrices are all BF16 (or all F16) keeps them as
// halves (read in place where they lie whole in HF's order), everything else becomes float32 in the
// owned arena (zero where the checkpoint has no tensor). `D` is the head width of RoPE's row order.
Weights placeWeights(const std::filesystem::path& dir, const ShardSet& shards, const ModelConfig& config, const std::vector<Placement>& plan,
                     const std::function<bool(const std::string&)>& ignored, const std::string& architecture, const LoadProgress& progress);

}  // namespace tscope::hf
