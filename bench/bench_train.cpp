// Training benchmark (--backend cpu|cuda, default cpu): one optimizer step (forward + mean cross-entropy + backward + gradient
// clipping + AdamW) of brown-small's architecture (L=4, H=6, C=192, V=8192 since the 2026-11-28 retraining, T=128, B=16, tied
// GPT-2 blocks) on random token batches, the same work bench/peers/torch_train_bench.py times in
// PyTorch. Prints one JSON object: median and best seconds per step, tokens/s, GFLOP/s, with the
// FLOP count 6*N_matmul + 12*L*T*C per token (the peer's formula). bench/run_train_bench.py puts
// it beside the peer. On CUDA the weights, gradients and AdamW state stay on the device and each
// timed step ends with a stream synchronisation.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model/nn/backend.h"
#include "model/select/backend_select.h"
#include "model/train/backward.h"
#include "model/train/optimizer.h"
#include "model/generate/sampling.h"
#include "model/train/train_model.h"

using namespace tscope;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int threads = 0, steps = 20, warmup = 3, layers = 4, heads = 6, embd = 192, vocab = 8192, ctx = 128, batch = 16;
  std::string backendName = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--backend") backendName = argv[i + 1];
    else if (flag == "--threads") threads = value;
    else if (flag == "--steps") steps = value;
    else if (flag == "--warmup") warmup = value;
    else if (flag == "--layers") layers = value;
    else if (flag == "--heads") heads = value;
    else if (flag == "--embd") embd = value;
    else if (flag == "--vocab") vocab = value;
    else if (flag == "--ctx") ctx = value;
    else if (flag == "--batch") batch = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  ModelConfig c;
  c.n_layer = layers;
  c.n_head = heads;
  c.n_embd = embd;
  c.vocab_size = vocab;
  c.n_positions = ctx;
  std::unique_ptr<Device> device;
  try {
    device = makeDevice(backendName, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  Backend& forward = device->forward();
  TrainModel model(c, *device);
  Weights weights(c);
  weights.initRandom(1);
  AdamWConfig adamConfig;
  adamConfig.lr = 1e-3f;
  const size_t total = weights.totalFloats();
  auto adam = device->makeAdamW(total, adamConfig);
  const auto mask = weightDecayMask(weights.layout(), total);
  adam->setDecayMask(mask.data());
  // Parameters and gradients in the device's memory (the host arena itself on the CPU).
  Buffer deviceParams, grads = forward.allocate(total);
  ParamView params = ParamView::of(weights);
  if (!forward.isHost()) {
    deviceParams = forward.allocate(total);
    forward.upload(deviceParams.data(), weights.arena(), total);
    params = ParamView::at(weights, deviceParams.data());
  }
  const ParamView gradView = ParamView::at(weights, grads.data());
  // Eight pre-generated random batches used in turn (as the peer does).
  Rng rng(7);
  const size_t n = (size_t)batch * ctx;
  std::vector<std::vector<int>> inputs(8, std::vector<int>(n)), targets(8, std::vector<int>(n));
  for (int b = 0; b < 8; ++b)
    for (size_t i = 0; i < n; ++i) {
      inputs[b][i] = static_cast<int>(rng.next() % vocab);
      targets[b][i] = static_cast<int>(rng.next() % vocab);
    }
  std::vector<double> times;
  double firstLoss = 0, lastLoss = 0;
  for (int s = 0; s < warmup + steps; ++s) {
    const auto t0 = Clock::now();
    const BatchView view{batch, ctx, inputs[s % 8].data(), targets[s % 8].data(), nullptr};
    const LossReport loss = model.lossAndGradients(params, gradView, view);
    adam->clipGradNorm(grads.data(), total, 1.0f);
    adam->step(params.arena, grads.data(), adamConfig.lr);
    forward.sync();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s == 0) firstLoss = loss.loss;
    lastLoss = loss.loss;
    if (s >= warmup) times.push_back(seconds);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2], best = times.front();
  const double matmulParams = 12.0 * layers * embd * embd + (double)vocab * embd;
  const double flopsPerToken = 6.0 * matmulParams + 12.0 * layers * ctx * embd;
  std::printf(
      "{\"engine\": \"tscope\", \"backend\": \"%s\", \"threads\": %d, \"backward\": \"%s\", \"layers\": %d, \"heads\": %d, \"embd\": %d, \"vocab\": "
      "%d, "
      "\"ctx\": %d, \"batch\": %d, \"timed_steps\": %d, \"median_s_per_step\": %.5f, \"best_s_per_step\": %.5f, "
      "\"median_tokens_per_s\": %.1f, \"best_tokens_per_s\": %.1f, \"median_gflop_per_s\": %.2f, \"flops_per_token\": %.0f, "
      "\"loss_first\": %.4f, \"loss_last\": %.4f}\n",
      device->name().c_str(), device->backward().threadCount(), device->backward().name().c_str(), layers, heads, embd, vocab, ctx, batch, steps,
      median, best, n / median, n / best, flopsPerToken * n / median / 1e9, flopsPerToken, firstLoss, lastLoss);
  return 0;
}
