// The Trainer (see trainer.h): AdamW steps over micro-batches on one Device, validation,
// checkpoints and exact resume. Determinism: the batch of step s, micro-batch m comes from
// Rng(trainBatchSeed(seed, s, m)), so a resumed run draws the same data as an uninterrupted one
// without saving any RNG state; the optimiser state and the weights are saved bit for bit.
#include "model/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/core/error.h"
#include "model/io/model_io.h"
#include "model/io/safetensors.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tscope {

namespace {

constexpr const char* kStateFile = "train_state.safetensors";

}  // namespace

uint64_t trainBatchSeed(uint64_t seed, int step, int micro) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + (uint64_t)step * 0xBF58476D1CE4E5B9ull + (uint64_t)micro * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

// --- Trainer ---------------------------------------------------------------------------------------

Trainer::Trainer(const TrainConfig& config, const DataSpec& data, std::unique_ptr<Device> device) : Trainer(config, data, true, std::move(device)) {}

Trainer::Trainer(const TrainConfig& config, const DataSpec& data, bool initialise, std::unique_ptr<Device> device)
    : config_(config), dataSpec_(data) {
  validate(config_);
  if (config_.model.isImage() != dataSpec_.digits)
    throw Error("model config: " + std::string(config_.model.isImage()
                                                   ? "an image model (image_size > 0) trains on images: --data digits"
                                                   : "--data digits is images: the model needs image_size, patch_size and num_channels"));
  if (config_.model.isImage()) config_.seqLen = 1 + config_.model.numPatches();
  data_ = makeDataSource(dataSpec_, config_.seqLen, config_.seed, config_.model.masked_lm);
  config_.seqLen = data_->sequenceLength();
  config_.model.vocab_size = data_->vocabSize();
  config_.model.n_positions = std::max(config_.seqLen, data_->maxSourceLength());
  config_.model.tokenizer = data_->tokenizer().kindName();  // the on-disk name
  if (data_->maxSourceLength() > 0) {                       // sequence-to-sequence data: an encoder-decoder model
    if (!config_.model.isEncoderDecoder())
      throw Error("model config: " + toString(dataSpec_) + " is sequence-to-sequence data: the model needs an encoder (n_encoder_layer > 0)");
    config_.model.decoder_start_token_id = data_->decoderStartId();
    config_.model.eos_token_id = data_->endId();
  } else if (config_.model.isEncoderDecoder()) {
    throw Error("model config: an encoder-decoder model (n_encoder_layer > 0) trains on sequence-to-sequence data (--data dates)");
  }
  if (auto msg = validateConfig(config_.model); !msg.empty()) throw Error("model config: " + msg);
  device_ = device ? std::move(device) : makeCpuDevice(config_.threads);
  backendName_ = device_->name();
  Backend& memory = device_->forward();
  model_ = std::make_unique<TrainModel>(config_.model, *device_);
  weights_ = Weights(config_.model);
  if (initialise) weights_.initRandom(config_.seed, config_.initStd);
  const size_t n = weights_.totalFloats();
  AdamWConfig adam = config_.adam;
  adam.lr = config_.maxLr;
  adam_ = device_->makeAdamW(n, adam);
  adam_->setDecayMask(weightDecayMask(weights_.layout(), n).data());
  if (!memory.isHost()) deviceParams_ = memory.allocate(n);
  grads_ = memory.allocate(n);
  if (config_.gradAccumulation > 1) gradientSum_ = memory.allocate(n);
  params_ = memory.isHost() ? ParamView::of(weights_) : ParamView::at(weights_, deviceParams_.data());
  gradView_ = ParamView::at(weights_, grads_.data());
  uploadWeights();
  schedule_ = {config_.maxLr, config_.minLr, config_.warmupSteps, config_.maxSteps};
  schedule_.validate();
  const size_t cells = (size_t)config_.batch * config_.seqLen;
  inputs_.resize(cells);
  targets_.resize(cells);
  scored_.resize(cells);
}

Trainer::~Trainer() = default;

void Trainer::uploadWeights() {
  if (deviceParams_.data()) device_->forward().upload(deviceParams_.data(), weights_.arena(), weights_.totalFloats());
  hostWeightsStale_ = false;
}

const Weights& Trainer::weights() const {
  if (hostWeightsStale_) {
    device_->forward().download(weights_.arena(), deviceParams_.data(), weights_.totalFloats());
    hostWeightsStale_ = false;
  }
  return weights_;
}

BatchView Trainer::batchView() const {
  const std::vector<int>& sources = data_->lastSources();
  const std::vector<float>& images = data_->lastImages();
  return {config_.batch,
          config_.seqLen,
          inputs_.data(),
          targets_.data(),
          scored_.data(),
          data_->lastSourceSteps(),
          sources.empty() ? nullptr : sources.data(),
          images.empty() ? nullptr : images.data()};
}

// One loop for every device, in its memory. The micro-batch gradients are summed in float in the
// order drawn, then divided by their count; the norm and AdamW are DeviceAdamW's. On the host this
// is optimizer.h's arithmetic, bit for bit; a device sums the norm in another order and averages by
// multiplying by 1 / k, so it is close to, not bit-identical with, the CPU run.
StepReport Trainer::step() {
  const auto started = std::chrono::steady_clock::now();
  Backend& memory = device_->forward();
  StepReport report;
  const int B = config_.batch, T = config_.seqLen, micro = config_.gradAccumulation;
  const size_t n = weights_.totalFloats();
  float* grads = grads_.data();
  for (int m = 0; m < micro; ++m) {
    Rng rng(trainBatchSeed(config_.seed, stepsDone_, m));
    data_->trainBatch(B, rng, inputs_.data(), targets_.data(), scored_.data());
    const LossReport loss = model_->lossAndGradients(params_, gradView_, batchView());
    report.loss += loss.loss / micro;
    report.auxLoss += loss.auxLoss / micro;
    report.tokens += B * T;
    if (micro > 1) {
      if (m == 0) memory.copy(gradientSum_.data(), grads, n);
      else memory.add(gradientSum_.data(), grads, n);
    }
  }
  if (micro > 1) {  // the mean of the micro-batch gradients, in place in the sum
    grads = gradientSum_.data();
    adam_->divide(grads, n, static_cast<float>(micro));
  }
  report.gradNorm = adam_->clipGradNorm(grads, n, config_.gradClip);  // gradClip <= 0: only measured
  if (!std::isfinite(report.gradNorm)) throw Error("the gradient is not finite at step " + std::to_string(stepsDone_ + 1) + " (lower lr)");
  report.lr = schedule_.at(stepsDone_);
  adam_->step(params_.arena, grads, report.lr);
  hostWeightsStale_ = deviceParams_.data() != nullptr;
  ++stepsDone_;
  report.step = stepsDone_;
  memory.sync();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  totalSeconds_ += report.seconds;
  history_.steps.push_back(report);
  return report;
}

EvalReport Trainer::evaluate() {
  EvalReport report;
  report.step = stepsDone_;
  const int B = config_.batch;
  double lossSum = 0;
  long scored = 0, correct = 0;
  for (int i = 0; i < config_.evalBatches; ++i) {
    data_->validationBatch(B, i, inputs_.data(), targets_.data(), scored_.data());
    const LossReport loss = model_->loss(params_, batchView());
    lossSum += loss.loss * loss.scoredTokens;
    scored += loss.scoredTokens;
    correct += std::max(0, loss.correctTokens);
    if (report.expertLoad.empty()) report.expertLoad = loss.expertLoad;
    else
      for (size_t k = 0; k < loss.expertLoad.size(); ++k) report.expertLoad[k] += loss.expertLoad[k];
  }
  report.loss = lossSum / std::max(1L, scored);
  if (config_.model.masked_lm || config_.model.isImage()) report.accuracy = static_cast<double>(correct) / static_cast<double>(std::max(1L, scored));
  history_.evals.push_back(report);
  return report;
}

const char* accuracyKey(const ModelConfig& model) {
  if (model.masked_lm) return "masked_accuracy";
  if (model.isImage()) return "accuracy";
  return nullptr;
}

double recentLoss(const TrainHistory& history, size_t n) {
  const auto& steps = history.steps;
  if (steps.empty()) return 0;
  const size_t from = steps.size() > n ? steps.size() - n : 0;
  double sum = 0;
  for (size_t i = from; i < steps.size(); ++i) sum += steps[i].loss;
  return sum / static_cast<double>(steps.size() - from);
}

void Trainer::saveCheckpoint(const std::string& dirString) const {
  const fs::path dir(dirString);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(dirString + ": cannot create the checkpoint directory (" + ec.message() + ")");
  // History as JSON columns (compact for long runs).
  json steps = json::object(), evals = json::object();
  for (const char* key : {"loss", "aux_loss", "grad_norm", "lr", "seconds"}) steps[key] = json::array();
  for (const StepReport& s : history_.steps) {
    steps["loss"].push_back(s.loss);
    steps["aux_loss"].push_back(s.auxLoss);
    steps["grad_norm"].push_back(s.gradNorm);
    steps["lr"].push_back(s.lr);
    steps["seconds"].push_back(s.seconds);
  }
  evals["step"] = json::array();
  evals["loss"] = json::array();
  evals["expert_load"] = json::array();
  const char* accuracyName = accuracyKey(config_.model);
  if (accuracyName) evals[accuracyName] = json::array();
  for (const EvalReport& e : history_.evals) {
    evals["step"].push_back(e.step);
    evals["loss"].push_back(e.loss);
    evals["expert_load"].push_back(e.expertLoad);
    if (accuracyName) evals[accuracyName].push_back(e.accuracy);
  }
  const AdamWState adam = adam_->saveState();
  weights();  // a device run: bring the host copy up to date
  const int64_t n = static_cast<int64_t>(weights_.totalFloats());
  const std::map<std::string, std::string> metadata = {{"producer", "tscope"},
                                                       {"train_config", trainConfigToJson(config_).dump()},
                                                       {"data", toString(dataSpec_)},
                                                       {"steps_done", std::to_string(stepsDone_)},
                                                       {"adam_step", std::to_string(adam.step)},
                                                       {"total_seconds", std::to_string(totalSeconds_)},
                                                       {"history", json{{"steps", steps}, {"evals", evals}}.dump()}};
  const std::string statePath = (dir / kStateFile).string();
  // Test hook: simulate a kill in the middle of writing this checkpoint (a partial temporary file,
  // then SIGKILL), so the tests can check that the previous checkpoint still loads and resumes.
  if (const char* at = std::getenv("TSCOPE_TEST_KILL_IN_CHECKPOINT"); at && std::atoi(at) == stepsDone_) {
    std::ofstream partial(statePath + ".tmp", std::ios::binary);
    partial << "partial";
    partial.flush();
    std::raise(SIGKILL);
  }
  writeSafetensors(statePath, {{"params", {n}, weights_.arena()}, {"adam.m", {n}, adam.m.data()}, {"adam.v", {n}, adam.v.data()}}, metadata);
  saveModelDir(dirString, weights_, nullptr);
  data_->saveTokenizer(dirString);
}

std::unique_ptr<Trainer> Trainer::resume(const std::string& dirString, std::unique_ptr<Device> device) {
  const std::string statePath = (fs::path(dirString) / kStateFile).string();
  if (!fs::exists(statePath)) throw Error(dirString + ": no checkpoint to resume (" + kStateFile + " is missing)");
  const SafetensorsFile state(statePath);
  auto meta = [&](const char* key) -> const std::string& {
    auto it = state.metadata().find(key);
    if (it == state.metadata().end()) throw Error(statePath + ": metadata \"" + key + "\" is missing");
    return it->second;
  };
  TrainConfig config;
  DataSpec data;
  json history;
  int stepsDone = 0;
  int64_t adamStep = 0;
  double seconds = 0;
  try {
    config = trainConfigFromJson(json::parse(meta("train_config")));
    data = parseDataSpec(meta("data"));
    stepsDone = std::stoi(meta("steps_done"));
    adamStep = std::stoll(meta("adam_step"));
    seconds = std::stod(meta("total_seconds"));
    history = json::parse(meta("history"));
  } catch (const Error& e) {
    throw Error(statePath + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(statePath + ": corrupt metadata (" + std::string(e.what()) + ")");
  }
  std::unique_ptr<Trainer> trainer(new Trainer(config, data, false, std::move(device)));
  const int64_t n = static_cast<int64_t>(trainer->weights_.totalFloats());
  state.readFloat("params", trainer->weights_.arena(), {n});
  AdamWState adam;
  adam.m = state.readFloat("adam.m");
  adam.v = state.readFloat("adam.v");
  adam.step = adamStep;
  trainer->adam_->loadState(adam);
  trainer->uploadWeights();
  trainer->stepsDone_ = stepsDone;
  trainer->totalSeconds_ = seconds;
  try {
    const json& steps = history.at("steps");
    for (size_t i = 0; i < steps.at("loss").size(); ++i) {
      StepReport s;
      s.step = static_cast<int>(i) + 1;
      s.loss = steps["loss"][i].get<double>();
      s.auxLoss = steps["aux_loss"][i].get<double>();
      s.gradNorm = steps["grad_norm"][i].get<double>();
      s.lr = steps["lr"][i].get<float>();
      s.seconds = steps["seconds"][i].get<double>();
      s.tokens = config.batch * trainer->config_.seqLen * config.gradAccumulation;
      trainer->history_.steps.push_back(s);
    }
    const json& evals = history.at("evals");
    for (size_t i = 0; i < evals.at("loss").size(); ++i)
      trainer->history_.evals.push_back({evals["step"][i].get<int>(), evals["loss"][i].get<double>(), evals["expert_load"][i].get<std::vector<int>>(),
                                         evals.contains("masked_accuracy") ? evals["masked_accuracy"].at(i).get<double>()
                                         : evals.contains("accuracy")      ? evals["accuracy"].at(i).get<double>()
                                                                           : -1.0});
  } catch (const json::exception& e) {
    throw Error(statePath + ": corrupt training history (" + std::string(e.what()) + ")");
  }
  return trainer;
}

}  // namespace tscope
