// Timing for the C++ micro-benchmarks: runs a body for a time budget, reps
// times, and prints the median rate. No framework to download.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace kb_bench {

// Calls `body` (which returns how many operations it did) until `seconds`
// pass, `reps` times; prints the median of `scale * ops / second` and returns it.
template <typename Body>
double median_rate(const char* name, const char* unit, double scale, Body body, int reps = 7, double seconds = 0.3) {
  using clock = std::chrono::steady_clock;
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) {
    double ops = 0;
    auto start = clock::now();
    std::chrono::duration<double> elapsed{};
    do {
      ops += body();
      elapsed = clock::now() - start;
    } while (elapsed.count() < seconds);
    rates.push_back(scale * ops / elapsed.count());
  }
  std::sort(rates.begin(), rates.end());
  double median = rates[rates.size() / 2];
  std::printf("%-40s %12.1f %s (%.1f–%.1f)\n", name, median, unit, rates.front(), rates.back());
  return median;
}

}  // namespace kb_bench
