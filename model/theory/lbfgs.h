// Limited-memory BFGS for small smooth problems (the scaling-law fits): the two-loop recursion of
// Nocedal & Wright 2006 (Algorithm 7.4) with a backtracking Armijo line search. Deterministic; the
// caller supplies the objective and its analytic gradient in one call.
#pragma once
#include <functional>
#include <span>
#include <vector>

namespace tscope {

struct LbfgsOptions {
  int maxIterations = 200;
  int memory = 8;                    // (s, y) pairs kept
  double gradientTolerance = 1e-12;  // stop when max |g_i| falls below this
  double decreaseTolerance = 1e-15;  // stop when f_k - f_{k+1} <= this x max(|f_k|, 1e-300)
  double armijo = 1e-4;              // sufficient decrease: f(x + t d) <= f(x) + armijo t g.d
  int maxBacktracks = 60;            // step halvings per line search
};

struct LbfgsResult {
  std::vector<double> x;
  double value = 0;
  int iterations = 0;
  bool converged = false;  // a tolerance was met (not the iteration cap, not a failed line search)
};

// Returns f(x) and writes its gradient into `gradient` (same size as x). A non-finite value is
// treated as "too far": the line search backs off from it.
using ObjectiveWithGradient = std::function<double(std::span<const double> x, std::span<double> gradient)>;

LbfgsResult minimizeLbfgs(const ObjectiveWithGradient& objective, std::vector<double> start, const LbfgsOptions& options = {});

}  // namespace tscope
