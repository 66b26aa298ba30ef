// The shared parts of the HuggingFace checkpoint readers (hf_shards.h): the shards of a model
// directory and the placement of HF tensors into tscope's layout.
#include "model/io/hf_shards.h"

#include <cstring>
#include <optional>
#include <set>

#include "model/core/error.h"
#include "model/core/file_check.h"

namespace fs = std::filesystem;

namespace tscope::hf {

namespace {

constexpr uintmax_t kMaxIndexBytes = 64u << 20;

// What keeps a 16-bit model's halves alive: the mapped shards they are read from in place, and
// the matrices that had to be built (q, k, v fused into c_attn with their RoPE row order; any
// misaligned tensor).
struct HalfStore {
  std::vector<std::shared_ptr<const MappedFile>> mappings;
  std::vector<std::vector<uint16_t>> owned;
};

// The 16-bit type every matrix of the plan is stored in, or none (an F32 matrix, or F16 and BF16
// mixed): then the model is held in float32.
std::optional<WeightType> halfTypeOf(const std::vector<Placement>& plan, const ShardSet& shards) {
  std::optional<WeightType> type;
  for (const auto& p : plan) {
    if (!isPackedMatrix(p)) continue;
    const DType dtype = shards.fileOf(p.hfName).info(p.hfName).dtype;
    if (dtype == DType::F32) return std::nullopt;
    const WeightType t = dtype == DType::BF16 ? WeightType::BF16 : WeightType::F16;
    if (type && *type != t) return std::nullopt;
    type = t;
  }
  return type;
}

// Every matrix of the plan as a PackedMatrix (rows = out, cols = in; the embeddings (V, C)): read in
// place from the mapped shard when it is one whole aligned tensor in HF's order, else assembled
// in `store` (source row rowOrder into row column + j, as placeTransposed places columns).
std::vector<PackedMatrix> placeHalves(const std::vector<Placement>& plan, const ShardSet& shards, const std::vector<ParamSpec>& layout,
                                      WeightType type, int64_t D, HalfStore& store, const std::function<void()>& placed) {
  std::map<std::string, size_t> indexOf;
  for (size_t i = 0; i < layout.size(); ++i) indexOf[layout[i].name] = i;
  std::vector<PackedMatrix> halves(layout.size());
  std::set<const MappedFile*> mapped;
  for (const auto& p : plan) {
    if (!isPackedMatrix(p)) continue;
    placed();
    const size_t i = indexOf.at(p.param);
    const ParamSpec& spec = layout[i];
    const int64_t rows = p.copy ? spec.shape[0] : spec.shape[1], cols = p.copy ? spec.shape[1] : spec.shape[0];
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    const uint16_t* inPlace = file.halvesInPlace(p.hfName, p.shape);
    if (inPlace && !p.ropeOrder && p.column == 0 && p.shape[0] == rows) {
      halves[i] = PackedMatrix{inPlace, type, rows, cols, !p.copy};
      if (mapped.insert(file.mapping().get()).second) store.mappings.push_back(file.mapping());
      continue;
    }
    if (!halves[i]) {
      store.owned.emplace_back((size_t)rows * (size_t)cols);
      halves[i] = PackedMatrix{store.owned.back().data(), type, rows, cols, !p.copy};
    }
    auto* dst = const_cast<uint16_t*>(halves[i].halfRow(0));
    const uint8_t* src = file.bytesInPlace(p.hfName);
    for (int64_t j = 0; j < p.shape[0]; ++j) {
      const int64_t source = p.ropeOrder ? ropeSourceRow(j, D) : j;
      std::memcpy(dst + (p.column + j) * cols, src + source * cols * 2, (size_t)cols * 2);
    }
    file.releasePages(p.hfName);
  }
  return halves;
}

}  // namespace

bool isPackedMatrix(const Placement& p) { return p.shape.size() == 2 && !p.floatVector; }

int64_t ropeSourceRow(int64_t j, int64_t D) {
  const int64_t head = j / D, e = j % D;
  return head * D + (e % 2 == 0 ? e / 2 : e / 2 + D / 2);
}

void placeTransposed(float* dst, int64_t width, const Placement& p, const float* src, int64_t D) {
  const int64_t rows = p.shape[0], in = p.shape.size() > 1 ? p.shape[1] : 1;
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t source = p.ropeOrder ? ropeSourceRow(j, D) : j;
    for (int64_t i = 0; i < in; ++i) dst[i * width + p.column + j] = src[source * in + i];
  }
}

std::string architectureOf(const nlohmann::json& j) {
  if (auto it = j.find("architectures"); it != j.end() && it->is_array() && !it->empty() && it->front().is_string())
    return it->front().get<std::string>();
  return "";
}

std::string modelTypeOf(const nlohmann::json& j) {
  if (auto it = j.find("model_type"); it != j.end() && it->is_string()) return it->get<std::string>();
  return "";
}

bool isNull(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null();
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

ShardSet::ShardSet(const fs::path& dir) {
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  if (somethingAt(index.string())) {
    readIndex(dir, index);
  } else if (somethingAt(single.string())) {
    auto& file = open(single);
    for (const auto& [name, info] : file.tensors()) where_[name] = &file;
  } else {
    throw Error(dir.string() + ": no model.safetensors or model.safetensors.index.json in the model directory");
  }
}

SafetensorsFile& ShardSet::open(const fs::path& path) {
  auto& slot = files_[path.string()];
  if (!slot) slot = std::make_unique<SafetensorsFile>(path.string());
  return *slot;
}

void ShardSet::readIndex(const fs::path& dir, const fs::path& index) {
  const std::string where = index.string();
  const nlohmann::json j = readJsonFile(where, kMaxIndexBytes, "safetensors index");
  auto map = j.is_object() ? j.find("weight_map") : j.end();
  if (map == j.end() || !map->is_object()) throw Error(where + ": no \"weight_map\" object");
  for (const auto& [name, shard] : map->items()) {
    if (!shard.is_string()) throw Error(where + ": the shard of '" + name + "' is not a file name");
    const std::string file = shard.get<std::string>();
    // A shard is a plain file beside the index: no directories, no way out of the model directory.
    if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." || file == "..")
      throw Error(where + ": the shard '" + file + "' of '" + name + "' is not a file name in the model directory");
    const fs::path path = dir / file;
    if (!fs::is_regular_file(path)) throw Error(where + ": shard '" + file + "' (holding '" + name + "') is missing");
    const SafetensorsFile& st = open(path);
    if (!st.has(name)) throw Error(path.string() + ": missing tensor '" + name + "' (the index places it in this shard)");
    where_[name] = &st;
  }
  // Tensors a shard holds that the index does not list are reported as unexpected, too.
  for (const auto& [path, file] : files_)
    for (const auto& [name, info] : file->tensors())
      if (!where_.count(name)) throw Error(path + ": tensor '" + name + "' is not listed in " + index.filename().string());
}

Weights placeWeights(const fs::path& dir, const ShardSet& shards, const ModelConfig& config, const std::vector<Placement>& plan,
                     const std::function<bool(const std::string&)>& ignored, const std::string& architecture, const LoadProgress& progress) {
  // Every tensor is checked before the arena is allocated, so config.json cannot ask for more
  // memory than the files hold.
  std::set<std::string> expected;
  for (const auto& p : plan) {
    if (!shards.has(p.hfName))
      throw Error((fs::exists(dir / "model.safetensors.index.json") ? (dir / "model.safetensors.index.json").string() : shards.anyPath()) +
                  ": missing tensor '" + p.hfName + "'");
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    if (file.info(p.hfName).shape != p.shape)
      throw Error(file.path() + ": tensor '" + p.hfName + "' has shape " + shapeText(file.info(p.hfName).shape) + " but the config needs " +
                  shapeText(p.shape));
    expected.insert(p.hfName);
  }
  for (const auto& [name, file] : shards.tensors())
    if (!expected.count(name) && !ignored(name))
      throw Error(file->path() + ": unexpected tensor '" + name + "' (not part of a " + architecture + " with this config)");
  const std::vector<ParamSpec> layout = parameterLayout(config);
  std::map<std::string, int64_t> widthOf;  // the columns of each tscope matrix
  for (const auto& spec : layout) widthOf[spec.name] = spec.shape.back();
  // A BF16 / F16 checkpoint keeps its matrices as halves; norms and biases (and F32 checkpoints)
  // become float32 in the owned arena, zero-filled where the checkpoint has no bias.
  const std::optional<WeightType> halfType = halfTypeOf(plan, shards);
  auto store = std::make_shared<HalfStore>();
  int done = 0;
  const auto placed = [&, total = static_cast<int>(plan.size())] { progress ? progress(++done, total) : void(); };
  const std::vector<PackedMatrix> halves =
      halfType ? placeHalves(plan, shards, layout, *halfType, config.headDim(), *store, placed) : std::vector<PackedMatrix>(layout.size());
  Weights weights(config, halves, store);
  std::vector<float> buffer;
  for (const auto& p : plan) {
    if (halfType && isPackedMatrix(p)) continue;  // held as halves
    placed();
    const SafetensorsFile& file = shards.fileOf(p.hfName);
    float* dst = weights.convertedParam(p.param);
    if (p.copy) {
      file.readFloat(p.hfName, dst, p.shape);
    } else {
      buffer.resize(file.info(p.hfName).numel());
      file.readFloat(p.hfName, buffer.data(), p.shape);
      placeTransposed(dst, widthOf.at(p.param), p, buffer.data(), config.headDim());
    }
    file.releasePages(p.hfName);
  }
  return weights;
}

}  // namespace tscope::hf
