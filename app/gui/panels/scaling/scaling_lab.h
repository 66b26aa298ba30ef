// The scaling lab's two tabs of the Scaling panel: "Your runs" (scaling_runs.cpp: a sweep picked,
// started, paused and resumed on the app's SweepSession, its runs against the fitted and published
// laws, the constants with bootstrap intervals, CSV and PNG export) and "Emergence"
// (scaling_emergence.cpp: exact match against per-token loss on a synthetic task's sweep).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "app/gui/panels/panels.h"
#include "model/train/sweep.h"

namespace tscope::gui {

struct ScalingRunsView {
  bool scanned = false;                                      // shipped and recent sweeps listed (first draw, after a start)
  std::vector<std::pair<std::string, std::string>> shipped;  // name -> sweep.json (shippedSweeps())
  std::vector<std::string> recent;                           // the user's sweep directories, newest first
  std::string pathInput;                                     // the Open... field
  int preset = 0;                                            // index into sweepPresets()
  std::string startDir;                                      // where Start writes (defaultSweepDir until edited)
  std::string startDirPreset;                                // the preset startDir was made for ("" edited by hand)
  std::string textFile;                                      // Start: a text file replacing Brown ("" the preset's data)
  std::string extendSizes, extendTokens;                     // Extend: "L3-d96, L4-d128" and "4M, 8M"
  std::string extendError;                                   // one line: a size or budget that does not parse
  bool openedDefault = false;                                // the first shipped sweep was opened by itself
  std::string exportDir;                                     // the folder Save CSV / Save PNG write into
  std::string exportFor;                                     // the sweep exportDir was defaulted for
  std::string exportMessage;                                 // one line: where the export wrote, or what went wrong
  bool exportFailed = false;
  std::string pendingPng;  // a PNG asked for and not yet reported
  bool isoFlop = false;    // the compute plot with N on x (iso-FLOP curves)
  int plotPage = 0;        // short windows show two plots at a time: 0 loss vs N and D, 1 compute
  // Emergence: the sweep on screen when it scores a task, else the shipped "addition" sweep.
  bool emergenceLoaded = false;
  std::optional<SweepResults> emergence;
  std::string emergenceSource, emergenceError;
};

void drawScalingRuns(PanelContext& ctx, ScalingRunsView& v);
void drawScalingEmergence(PanelContext& ctx, ScalingRunsView& v);

// scaling_plots.cpp: the plots of a sweep's measured runs (each records itself by its id).
// The runs as scaling points (N as the sweep counts it), each with its hover label.
struct LabelledPoints {
  std::vector<ScalingPoint> points;
  std::vector<std::string> labels;  // (points) "L2-d64-1M: val 3.21"
};
LabelledPoints labelledPoints(const SweepResults& results);
std::vector<double> distinctValues(std::vector<double> values);  // ascending, each once
// Colour of `value` among `keys` (distinctValues): one category colour per key.
ImU32 keyColour(const std::vector<double>& keys, double value);

// Loss against N (byParams, points coloured by D, the fitted L(N) and Kaplan's published slope) or
// against D (coloured by N, L(D)). Returns the number of points drawn.
int drawPowerLawPlot(PanelContext& ctx, const SweepView& view, bool byParams, ImVec2 size);
// Loss against compute C = 6ND with the fitted L(N, C / 6N) of each size and the fitted
// compute-optimal frontier; isoFlop puts N on x instead, with fitted iso-FLOP curves.
void drawComputePlot(PanelContext& ctx, const SweepView& view, bool isoFlop, ImVec2 size);
// N_opt against C: ours (fitted range solid, the extrapolation thin), Hoffmann 2022, Besiroglu 2024.
void drawOptimumPlot(PanelContext& ctx, const SweepView& view, ImVec2 size);

}  // namespace tscope::gui
