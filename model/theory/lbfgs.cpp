// L-BFGS (see lbfgs.h). The inverse-Hessian estimate is never formed: the two-loop recursion applies
// it to the gradient from the last `memory` steps s = x_{k+1} - x_k and gradient changes y. A step
// that does not decrease f enough is halved (Armijo backtracking); when even that fails the memory
// is dropped once and steepest descent is tried before giving up.
#include "model/theory/lbfgs.h"

#include <algorithm>
#include <cmath>

namespace tscope {

namespace {

double dot(std::span<const double> u, std::span<const double> v) {
  double sum = 0;
  for (size_t i = 0; i < u.size(); ++i) sum += u[i] * v[i];
  return sum;
}

double maxAbs(std::span<const double> v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// The last `capacity` (s, y) pairs in a ring, oldest overwritten first.
class CurvatureMemory {
 public:
  CurvatureMemory(int capacity, size_t n)
      : s_(capacity, std::vector<double>(n)), y_(capacity, std::vector<double>(n)), rho_(capacity), weight_(capacity) {}
  void clear() { count_ = 0; }
  bool empty() const { return count_ == 0; }
  void push(std::span<const double> s, std::span<const double> y, double sy) {
    std::copy(s.begin(), s.end(), s_[next_].begin());
    std::copy(y.begin(), y.end(), y_[next_].begin());
    rho_[next_] = 1.0 / sy;
    next_ = (next_ + 1) % capacity();
    count_ = std::min(count_ + 1, capacity());
  }
  // direction = -H g by the two-loop recursion (Nocedal & Wright Algorithm 7.4), H_0 = gamma I with
  // gamma = s.y / y.y of the newest pair.
  void direction(std::span<const double> gradient, std::span<double> direction) {
    std::copy(gradient.begin(), gradient.end(), direction.begin());
    for (int i = 0; i < count_; ++i) {  // newest to oldest
      const int k = slot(i);
      weight_[k] = rho_[k] * dot(s_[k], direction);
      for (size_t j = 0; j < direction.size(); ++j) direction[j] -= weight_[k] * y_[k][j];
    }
    const int newest = slot(0);
    const double gamma = 1.0 / (rho_[newest] * dot(y_[newest], y_[newest]));
    for (double& v : direction) v *= gamma;
    for (int i = count_ - 1; i >= 0; --i) {  // oldest to newest
      const int k = slot(i);
      const double b = rho_[k] * dot(y_[k], direction);
      for (size_t j = 0; j < direction.size(); ++j) direction[j] += (weight_[k] - b) * s_[k][j];
    }
    for (double& v : direction) v = -v;
  }

 private:
  int capacity() const { return static_cast<int>(s_.size()); }
  int slot(int age) const { return (next_ - 1 - age + 2 * capacity()) % capacity(); }  // age 0: newest
  std::vector<std::vector<double>> s_, y_;
  std::vector<double> rho_, weight_;
  int next_ = 0, count_ = 0;
};

// Steepest descent scaled to a unit step: the first step has no curvature to size it.
void steepestUnitStep(std::span<const double> gradient, std::span<double> direction) {
  const double norm = std::sqrt(dot(gradient, gradient));
  for (size_t j = 0; j < direction.size(); ++j) direction[j] = -gradient[j] / norm;
}

}  // namespace

LbfgsResult minimizeLbfgs(const ObjectiveWithGradient& objective, std::vector<double> start, const LbfgsOptions& options) {
  const size_t n = start.size();
  LbfgsResult result;
  result.x = std::move(start);
  std::vector<double> gradient(n), trial(n), trialGradient(n), direction(n), step(n), change(n);
  CurvatureMemory memory(std::max(1, options.memory), n);
  result.value = objective(result.x, gradient);
  if (!std::isfinite(result.value)) return result;
  for (int iteration = 0; iteration < options.maxIterations; ++iteration) {
    if (maxAbs(gradient) <= options.gradientTolerance) {
      result.converged = true;
      break;
    }
    if (memory.empty()) steepestUnitStep(gradient, direction);
    else memory.direction(gradient, direction);
    double slope = dot(gradient, direction);
    if (!(slope < 0)) {  // not a descent direction (a stale curvature pair): start the memory over
      memory.clear();
      steepestUnitStep(gradient, direction);
      slope = dot(gradient, direction);
    }
    double t = 1, trialValue = 0;
    bool accepted = false;
    for (int halving = 0; halving <= options.maxBacktracks && !accepted; ++halving, t *= 0.5) {
      for (size_t j = 0; j < n; ++j) trial[j] = result.x[j] + t * direction[j];
      trialValue = objective(trial, trialGradient);
      accepted = std::isfinite(trialValue) && trialValue <= result.value + options.armijo * t * slope;
    }
    if (!accepted) {
      if (memory.empty()) break;  // steepest descent found no decrease either: as far as it goes
      memory.clear();
      continue;
    }
    for (size_t j = 0; j < n; ++j) {
      step[j] = trial[j] - result.x[j];
      change[j] = trialGradient[j] - gradient[j];
    }
    const double sy = dot(step, change);
    if (sy > 1e-12 * std::sqrt(dot(step, step) * dot(change, change))) memory.push(step, change, sy);
    const double decrease = result.value - trialValue;
    const double previous = result.value;
    result.x.swap(trial);
    gradient.swap(trialGradient);
    result.value = trialValue;
    result.iterations = iteration + 1;
    if (decrease <= options.decreaseTolerance * std::max(std::fabs(previous), 1e-300)) {
      result.converged = true;
      break;
    }
  }
  return result;
}

}  // namespace tscope
