// MD5 core throughput at 1 MiB and time per digest at 1 KiB and 256 B,
// without Node: the floor under bench/md5.bench.ts's native rows.
#include <cstdint>
#include <vector>

#include "bench_clock.h"
#include "core/md5.h"

int main() {
  volatile std::uint8_t sink = 0;
  std::vector<std::uint8_t> data(1 << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 131 + 17);
  std::uint8_t digest[16];
  kb_bench::median_rate("md5 one-shot, 1 MiB", "MB/s", data.size() / 1e6, [&] {
    kb::md5(data.data(), data.size(), digest);
    sink = sink ^ digest[0];
    return 1;
  });
  for (std::size_t size : {1024u, 256u}) {
    double per_second =
        kb_bench::median_rate(size == 1024 ? "md5 one-shot, 1 KiB" : "md5 one-shot, 256 B", "digests/s", 1, [&] {
          for (int i = 0; i < 1000; ++i) {
            kb::md5(data.data() + i, size, digest);
            sink = sink ^ digest[0];
          }
          return 1000;
        });
    std::printf("%-40s %12.1f ns/op\n", "", 1e9 / per_second);
  }
  return 0;
}
