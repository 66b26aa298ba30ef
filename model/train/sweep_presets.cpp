// The ready-made sweeps (sweep.h) and the shipped sweep files. Sizes keep the head width at 16 so
// that only depth and width change along the grid; "brown" spans 45x in non-embedding parameters
// (27.6K to 1.24M), the minimum being 30x.
#include <algorithm>
#include <filesystem>

#include "model/train/sweep.h"

namespace fs = std::filesystem;

namespace tscope {

namespace {

// The run config every sweep run starts from: a pre-norm GPT with learned positions, AdamW with
// warm-up and cosine decay, a few validation points per run, a checkpoint every few hundred steps.
TrainConfig sweepBase(int batch, int seqLen, float lr) {
  TrainConfig c;
  c.batch = batch;
  c.seqLen = seqLen;
  c.maxLr = lr;
  c.minLr = lr / 10;
  c.warmupSteps = 50;
  c.adam.weightDecay = 0.1f;
  c.gradClip = 1.0f;
  c.evalEvery = 100;
  c.evalBatches = 8;
  c.checkpointEvery = 250;
  c.seed = 1;
  c.threads = 2;
  return c;
}

SweepPreset brown() {
  SweepPreset p;
  p.key = "brown";
  p.name = "Brown: 5 sizes x 4 budgets";
  p.description =
      "Five GPT sizes from 28K to 1.2M non-embedding parameters, each trained on 0.25M to 2M tokens of Brown: the losses fall on "
      "power laws in N and D, and Chinchilla's L(N, D) fitted to them gives our own compute-optimal split.";
  p.spec.title = p.name;
  p.spec.description = p.description;
  p.spec.data = parseDataSpec("brown:vocab=1024");
  p.spec.base = sweepBase(16, 64, 2e-3f);
  p.spec.sizes = {{1, 48, 3, 0}, {2, 64, 4, 0}, {2, 96, 6, 0}, {3, 128, 8, 0}, {4, 160, 10, 0}};
  p.spec.tokens = {250000, 500000, 1000000, 2000000};
  return p;
}

SweepPreset tiny() {
  SweepPreset p;
  p.key = "tiny";
  p.name = "Tiny: 3 sizes x 2 budgets (seconds)";
  p.description = "Six very small runs on Brown that finish in seconds: enough points to fit the laws and to see the lab work.";
  p.spec.title = p.name;
  p.spec.description = p.description;
  p.spec.data = parseDataSpec("brown:vocab=512");
  p.spec.base = sweepBase(8, 32, 3e-3f);
  p.spec.base.warmupSteps = 5;
  p.spec.base.evalEvery = 10;
  p.spec.base.evalBatches = 2;
  p.spec.base.checkpointEvery = 0;
  p.spec.sizes = {{1, 16, 2, 0}, {1, 24, 2, 0}, {1, 32, 2, 0}};
  p.spec.tokens = {4000, 8000};
  return p;
}

}  // namespace

const std::vector<SweepPreset>& sweepPresets() {
  static const std::vector<SweepPreset> presets = {brown(), tiny()};
  return presets;
}

const SweepPreset* findSweepPreset(const std::string& key) {
  for (const SweepPreset& preset : sweepPresets())
    if (preset.key == key) return &preset;
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> shippedSweeps() {
  std::vector<std::pair<std::string, std::string>> found;
  const fs::path root = fs::path(TSCOPE_SOURCE_DIR) / "assets" / "sweeps";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (fs::exists(entry.path() / "sweep.json")) found.emplace_back(entry.path().filename().string(), (entry.path() / "sweep.json").string());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace tscope
