// tscope-cli classify: an image model's classes for one image (docs/VISION.md), its arrays with
// --dump, and with --test-set the digits model's accuracy on the fixed test split beside a logistic
// regression's.
#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/forward_dump.h"
#include "model/core/error.h"
#include "model/io/image.h"
#include "model/io/npy.h"
#include "model/nn/transformer.h"
#include "model/nn/vision_views.h"
#include "model/train/digits.h"

namespace tscope::cli {

using nlohmann::json;

namespace {

const ModelConfig& requireImageModel(const LoadedModel& model) {
  const ModelConfig& c = model.weights.config();
  if (!c.isImage()) throw Error(model.path + " is a text model: classify needs an image model (such as assets/models/digits-vit)");
  return c;
}

std::vector<std::string> labelsOf(const LoadedModel& model) {
  std::vector<std::string> labels;
  if (model.tokenizer)
    for (int id = 0; id < model.tokenizer->vocabSize(); ++id) labels.push_back(model.tokenizer->tokenBytes(id));
  return labels;
}

// The model's input from --image FILE (any size: preprocessed as the model's preprocessor config
// says) or --digit N (test image N of the digits' fixed split, for an 8x8 one-channel model).
std::vector<float> imageInput(const Args& args, const LoadedModel& model, json& out) {
  const ModelConfig& c = model.weights.config();
  if (args.has("image") == args.has("digit")) throw UsageError("give exactly one of --image FILE and --digit N");
  if (args.has("image")) {
    const Image image = readImage(args.str("image"));
    out["image"] = {{"path", args.str("image")}, {"width", image.width}, {"height", image.height}, {"channels", image.channels}};
    return preprocessImage(image, model.preprocessing, c.num_channels);
  }
  if (c.image_size != kDigitSide || c.num_channels != 1) throw Error(model.path + ": --digit needs a model of 8x8 one-channel images (the digits)");
  const DigitsData digits = loadDigits();
  const DigitsSplit split = digitsSplit(digits.size());
  const int n = static_cast<int>(args.integer("digit", 0, 0, static_cast<int64_t>(split.test.size()) - 1));
  std::vector<float> pixels(64);
  digitImage(digits, split.test[n], pixels.data());
  out["digit"] = {{"test_index", n}, {"label", digits.labels[split.test[n]]}};
  return pixels;
}

// Returns how many files it wrote.
size_t writeVisionDump(const std::string& dir, const LoadedModel& model, const Trace& trace, const std::vector<float>& pixels) {
  const ModelConfig& c = model.weights.config();
  const int T = c.n_positions, H = c.n_head, S = c.image_size;
  writeNpy((std::filesystem::path(dir) / "pixels.npy").string(), pixels.data(), {c.num_channels, S, S});
  std::vector<std::vector<float>> maps;
  for (int l = 0; l < c.n_layer; ++l) {
    const std::optional<int> slot = trace.capturedIndex(l);
    if (!slot) throw Error("classify --dump: layer " + std::to_string(l) + "'s maps were not captured");
    const size_t size = (size_t)H * T * T;
    maps.emplace_back(trace.attn.begin() + *slot * size, trace.attn.begin() + (*slot + 1) * size);
  }
  const std::vector<float> rollout = attentionRollout(maps, H, T);
  writeNpy((std::filesystem::path(dir) / "rollout.npy").string(), rollout.data(), {T, T});
  const Weights& params = model.weights;
  if (hasPositionTable(c)) {  // learned, or the fixed 2-D sin-cos table
    const std::vector<float> similarity = positionSimilarity(c, params.wpe, (size_t)T * c.n_embd);
    const int P = c.numPatches();
    writeNpy((std::filesystem::path(dir) / "position_similarity.npy").string(), similarity.data(), {P, P});
  }
  const std::vector<float> filters = patchFilters(c, params.patchWeight, (size_t)c.patchDim() * c.n_embd);
  writeNpy((std::filesystem::path(dir) / "patch_filters.npy").string(), filters.data(), {c.n_embd, c.num_channels, c.patch_size, c.patch_size});
  return hasPositionTable(c) ? 4 : 3;  // pixels, rollout, (position similarity,) filters
}

int runTestSet(const Args& args, const LoadedModel& model) {
  const ModelConfig& c = model.weights.config();
  if (c.image_size != kDigitSide || c.num_channels != 1) throw Error(model.path + ": --test-set is the digits' test split: an 8x8 one-channel model");
  const DigitsData digits = loadDigits();
  const DigitsSplit split = digitsSplit(digits.size());
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  Transformer transformer(model.weights, *backend);
  std::vector<float> pixels(64);
  int hits = 0;
  std::vector<std::vector<int>> counts(kDigitClasses, std::vector<int>(kDigitClasses, 0));
  for (int index : split.test) {
    digitImage(digits, index, pixels.data());
    const std::vector<float> logits = transformer.classLogits(pixels);
    const int predicted = static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    hits += predicted == digits.labels[index];
    ++counts[digits.labels[index]][predicted];
  }
  const DigitsBaseline baseline = logisticRegressionBaseline(digits, split);
  json out = {
      {"model", model.path},
      {"test_images", split.test.size()},
      {"train_images", split.train.size()},
      {"test_accuracy", hits / static_cast<double>(split.test.size())},
      {"confusion", counts},
      {"baseline_logistic_regression",
       {{"test_accuracy", baseline.testAccuracy}, {"train_accuracy", baseline.trainAccuracy}, {"epochs", baseline.epochs}, {"l2", baseline.l2}}}};
  describeBackend(out, *backend, backendNote);
  print(out);
  return 0;
}

}  // namespace

int runClassify(const Argv& argv) {
  Args args("classify", argv, {"model", "image", "digit", "top", "mask", "dump", "backend", "threads"}, {"test-set"});
  LoadedModel model = loadModel(args.str("model"));
  const ModelConfig& c = requireImageModel(model);
  if (args.has("test-set")) return runTestSet(args, model);
  json out = {{"model", model.path}};
  std::vector<float> pixels = imageInput(args, model, out);
  if (args.has("mask")) {  // patches blanked, as the Vision panel's mask clicks do
    const std::vector<int> masked = args.intList("mask");
    pixels = maskImagePatches(c, std::move(pixels), masked);
    out["masked"] = masked;
  }
  const int top = static_cast<int>(args.integer("top", 5, 1, 100000));
  const std::string dump = args.has("dump") ? args.str("dump") : "";
  if (!dump.empty()) requireWritableOutput(dump, true);
  std::string backendNote;
  auto backend = chooseBackend(args, &backendNote);
  Transformer transformer(model.weights, *backend);
  Trace trace;
  KVCache cache(*backend, c, c.n_positions);
  std::vector<float> logits;
  transformer.forwardImage(pixels, cache, logits, dump.empty() ? nullptr : &trace, dump.empty() ? TraceOptions{} : dumpTraceOptions(c));
  const std::vector<float> classLogits(logits.begin(), logits.begin() + c.vocab_size);
  json classes = json::array();
  for (const ClassScore& s : topClasses(classLogits, labelsOf(model), top)) classes.push_back({{"label", s.label}, {"id", s.id}, {"p", s.p}});
  out["top"] = classes;
  out["patches"] = c.numPatches();
  out["tokens"] = c.n_positions;
  if (!dump.empty()) {
    std::string missing;
    const std::vector<int> ids = imageTokenIds(c);
    size_t files = writeForwardDump(dump, model, trace, logits, ids, transformer, missing);
    files += writeVisionDump(dump, model, trace, pixels);
    out["dump"] = {{"dir", dump}, {"files", files}};
    if (!missing.empty()) out["dump"]["missing"] = missing;
  }
  describeBackend(out, *backend, backendNote);
  print(out);
  return 0;
}

}  // namespace tscope::cli
