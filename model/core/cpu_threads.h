// How many OpenMP threads the CPU fast paths use (the forward Backend and the BackwardOps share
// the choice): an explicit count, else $TSCOPE_THREADS, else the cores that really run in
// parallel, measured, since virtual machines may report more CPUs than they schedule at once.
// Only for .cpp files compiled with OpenMP (model/).
#pragma once
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace tscope {

// Times a short compute loop on 1 and on n threads and keeps the speed-up (OpenMP threads that
// only fight over one core made GEMV 10x slower on a 2-vCPU sandbox).
inline int effectiveThreadCount() {
  const int reported = omp_get_num_procs();
  if (reported <= 1) return 1;
  auto spin = [](int threads, long iterationsPerThread) {
    const auto t0 = std::chrono::steady_clock::now();
    double sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    {
      double a = 0;
      for (long i = 0; i < iterationsPerThread; ++i) a += static_cast<double>(i) * 1e-9;
      sink += a;
    }
    volatile double keep = sink;
    (void)keep;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const long work = 2000000;  // ~2 ms per thread
  spin(reported, work / 4);   // wake the thread pool
  const double one = spin(1, work), all = spin(reported, work);
  const int effective = static_cast<int>(std::lround(reported * one / all));
  return std::clamp(effective, 1, reported);
}

// threads > 0: itself; otherwise $TSCOPE_THREADS if set and > 0, else effectiveThreadCount().
inline int resolveThreadCount(int threads) {
  if (threads > 0) return threads;
  const char* env = std::getenv("TSCOPE_THREADS");
  threads = env ? std::atoi(env) : 0;
  return threads > 0 ? threads : effectiveThreadCount();
}

}  // namespace tscope
