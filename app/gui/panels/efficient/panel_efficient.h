// The Efficient-attention lab: the lecture's answers to attention's O(n^2) (Reformer's LSH,
// Linformer, linear attention, Performer, sliding window, FlashAttention) applied to the live
// model's real q, k, v, beside exact attention; FlashAttention's online softmax tile by tile; and
// every variant's time and memory measured against n on a task channel (app/session/tasks.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "app/gui/widgets/figure.h"
#include "app/session/tasks.h"
#include "app/gui/session_names.h"
#include "model/nn/efficient_attention.h"
#include "model/nn/flash_steps.h"
#include "model/nn/variant_views.h"

namespace tscope::gui {

// The longest prompt the plain-loop reference (O(n^2) memory, double) runs on in the panel.
inline constexpr int kMaxReferenceTokens = 2048;

// One measured point of the cost section: a variant's fast path on random q, k, v of n tokens.
struct CostPoint {
  AttentionVariant variant;
  int n = 0;
  double ms = 0;         // median wall time of one call
  double peakBytes = 0;  // the working set attentionVariantFast reports
};

// The cost section's measurement so far: attentionVariantFast of every variant over n = 256 ..
// maxN, run on the "efficient cost" task channel (never the UI thread) and published after every
// point; a new measurement replaces the one running.
struct CostMeasurement {
  int d = 0, maxN = 0;
  int planned = 0;  // points it makes
  std::vector<CostPoint> points;
  std::string error;
};
void measureCost(TaskChannel<CostMeasurement>& channel, const AttentionVariantParams& knobs, int d, int maxN);

class EfficientPanel : public Panel {
 public:
  void draw(PanelContext& ctx) override;

 private:
  // What the live section's maps and numbers were computed from.
  struct LiveKey {
    uint64_t session = 0, snapshot = 0;  // Session::serial (the channel outlives a model switch) and Snapshot::id
    int layer = -1, head = -1;
    std::string knobs;  // the variant's name and knobs, as text
    bool operator==(const LiveKey&) const = default;
  };
  // The live section's maps are computed on the "efficient live" task channel (the plain-loop
  // reference is O(n^2 d) in double): the job holds the snapshot its q, k, v point into.
  struct LiveJob {
    LiveKey key;
    std::shared_ptr<const Snapshot> snapshot;
    HeadQkv head;
    AttentionVariantParams params;
    std::string problem;  // set instead of a head: why there are no maps
  };
  struct LiveResult {
    LiveKey key;
    int tokens = 0;
    std::string problem;  // why the maps cannot be shown ("" when they are)
    std::optional<VariantResult> variant;
    std::vector<float> exactMap;  // (n, n)
    VariantError error;
  };
  static void runLive(const LiveJob& job, TaskScope<LiveResult>& scope);
  struct FlashKey {
    uint64_t snapshot = 0;
    int layer = -1, head = -1, query = -1, tile = 0;
    bool operator==(const FlashKey&) const = default;
  };
  void drawControls(PanelContext& ctx);
  void postLive(PanelContext& ctx, const LiveKey& key);
  void takeLive(PanelContext& ctx);  // uploads the newest result's maps
  void drawLive(PanelContext& ctx);
  void drawMaps(PanelContext& ctx, float reservedBelow);  // exact and variant side by side
  void drawRowError(PanelContext& ctx, float height);
  void drawNextToken(PanelContext& ctx);
  void drawExtras(PanelContext& ctx);      // efficient_extras.cpp: LSH buckets, Linformer's P, window's receptive field
  void drawLshBuckets(PanelContext& ctx);  // efficient_extras.cpp
  void drawFlash(PanelContext& ctx);       // efficient_flash.cpp
  void drawTileGrid(PanelContext& ctx, const FlashSteps& steps, int n, bool causal);  // efficient_flash.cpp
  void drawCost(PanelContext& ctx);                                                   // efficient_cost.cpp

  // Live section.
  LiveKey postedLive_;                      // the newest job posted
  std::shared_ptr<const LiveResult> live_;  // the result on screen (null before the first)
  int tokens_ = 0;                          // n of the head on screen
  Heatmap exactHeat_, variantHeat_, projectedHeat_;
  Colorbar exactBar_, variantBar_, projectedBar_;
  int lshRound_ = 0;
  // FlashAttention section.
  FlashKey flashKey_;
  std::optional<FlashSteps> flash_;
  std::string flashError_;
  int flashStep_ = 0;
  // Cost section.
  int costMaxN_ = 4096;
};

}  // namespace tscope::gui
