// The squasher core alone over the fixture corpus (support/squash-corpus),
// without Node: the floor under bench/squash.bench.ts's native row, so the
// binding's share (argument checks, the output Buffer, GC) can be read off.
// Reports MB/s by wall clock and per CPU-second of this thread.
//
//   g++ -std=c++17 -O3 -Inative bench/native/squash_bench.cc native/core/squash.cc native/core/squash/*.cc -o
//   squash_bench
//   ./squash_bench [fixture-dir]
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_clock.h"
#include "core/squash.h"

namespace {

double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

std::vector<std::string> read_corpus(const std::string& dir) {
  std::vector<std::string> pages;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      const bool html = name.size() > 5 && name.compare(name.size() - 5, 5, ".html") == 0;
      if (!html || name.find(".expected.") != std::string::npos) continue;
      std::ifstream file(dir + "/" + name, std::ios::binary);
      std::ostringstream bytes;
      bytes << file.rdbuf();
      pages.push_back(bytes.str());
    }
    closedir(d);
  }
  return pages;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "support/squash-corpus";
  const std::vector<std::string> pages = read_corpus(dir);
  std::size_t total = 0, largest = 0;
  for (const std::string& page : pages) {
    total += page.size();
    largest = std::max(largest, page.size());
  }
  if (pages.empty()) {
    std::fprintf(stderr, "no pages in %s (run from the repository root or pass the directory)\n", dir.c_str());
    return 1;
  }
  std::vector<std::uint8_t> out(largest);
  const kb::squash_options options;
  volatile std::size_t sink = 0;
  const auto pass = [&] {
    for (const std::string& page : pages) {
      sink =
          sink + kb::squash_html(reinterpret_cast<const std::uint8_t*>(page.data()), page.size(), out.data(), options);
    }
    return 1;
  };
  std::printf("%zu pages, %zu bytes\n", pages.size(), total);
  const double cpu0 = thread_seconds();
  double passes = 0;
  const double wall = kb_bench::median_rate("squash_html, corpus (wall clock)", "MB/s", total / 1e6, [&] {
    passes += 1;
    return pass();
  });
  const double cpu = thread_seconds() - cpu0;
  std::printf("%-40s %12.1f MB/s (all reps)\n", "squash_html, corpus (per CPU-second)", passes * total / 1e6 / cpu);
  return wall > 0 ? 0 : 1;
}
