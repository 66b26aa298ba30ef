// The model session: owns the loaded model and runs every forward on a worker thread. The UI
// posts Requests (latest wins: a request still waiting is replaced) and reads the newest
// immutable Snapshot once per frame, so it never waits on the model.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/model_io.h"
#include "model/sampling.h"
#include "model/trace.h"
#include "model/transformer.h"

namespace tscope::gui {

struct Request {
  std::string prompt;
  SamplingParams sampling;
  std::optional<MoeRoutingParams> moe;  // routing knobs to use (MoE models)
  int beamWidth = 0;                    // > 0: also run beam search from the prompt
  int beamSteps = 4;
  bool measureKvCache = false;          // also time decoding with and without the KV cache
};

struct KvCacheTiming {
  int tokens = 0;                 // tokens decoded in the measurement
  double withCacheMsPerToken = 0;
  double withoutCacheMsPerToken = 0;
};

struct Snapshot {
  uint64_t id = 0;                    // increases with every computed request
  Request request;                    // what was computed
  std::vector<int> ids;               // (T) prompt tokens
  std::vector<std::string> tokenText; // (T) printable token text
  // A prompt longer than the context: the tokens before the last n_ctx, not run (fitToContext).
  std::vector<int> droppedIds;             // (dropped) every dropped token, in order
  std::vector<std::string> droppedText;    // text of the last kMaxDroppedShown of them (the strip shows these greyed)
  static constexpr size_t kMaxDroppedShown = 64;
  Trace trace;                        // every layer: attention, scores, residuals, logit lens, MoE
  LogitStages stages;                 // next-token distribution at each sampling stage (V)
  std::optional<BeamResult> beam;     // when requested
  std::optional<KvCacheTiming> kvTiming;
  size_t kvCacheBytes = 0;            // the cache after the prompt
  double forwardMs = 0;
  double tokensPerSecond = 0;         // prompt tokens / forward time
  std::string error;                  // one line when the request could not be computed
};

class Session {
 public:
  // backendName: auto (the GPU when a CUDA device is usable, else the CPU), cpu or cuda; throws
  // tscope::Error (one line) for an unknown or unavailable one.
  explicit Session(LoadedModel model, const std::string& backendName = "auto");
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void post(Request request);                         // latest wins
  std::shared_ptr<const Snapshot> latest() const;     // null until the first result
  bool busy() const { return busy_.load(); }
  uint64_t postedCount() const { return posted_.load(); }

  const ModelConfig& config() const { return model_.weights.config(); }
  const Weights& weights() const { return model_.weights; }
  const Tokenizer* tokenizer() const { return model_.tokenizer.get(); }
  const std::string& modelPath() const { return model_.path; }
  std::string backendName() const { return backend_->name(); }
  const std::string& backendChoice() const { return backendChoice_; }
  // For the status bar, e.g. "CUDA: NVIDIA H200 (device 0, sm_90, 139 GiB)" or "CPU (Eigen,
  // 3 threads; no CUDA device: cudaGetDeviceCount: ...)".
  std::string backendDescription() const;

 private:
  void run();
  std::shared_ptr<Snapshot> compute(const Request& request, uint64_t id);

  LoadedModel model_;
  std::string backendChoice_;  // as asked for (auto, cpu, cuda)
  std::string backendNote_;    // makeBackend's note: what auto chose and why
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Transformer> transformer_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Request> pending_;
  std::shared_ptr<const Snapshot> latest_;
  std::atomic<bool> busy_{false};
  std::atomic<uint64_t> posted_{0};
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tscope::gui
