// Lock-file acquire + release pairs a second through the core alone, and
// the open + close floor under it: what bench/flock.bench.ts's native rows
// would reach with no binding in the way.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "bench_clock.h"
#include "core/flock.h"

int main() {
  char tmpl[] = "/tmp/kb-flock-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  const std::string path = dir + "/bench.lock";
  int failures = 0;
  kb_bench::median_rate("acquire + unlock + close", "pairs/s", 1, [&] {
    for (int i = 0; i < 100; ++i) {
      kb::acquire_result r = kb::acquire_lock_file(path.c_str());
      if (r.status != kb::lock_status::acquired) ++failures;
      kb::unlock(r.fd);
      kb::close_fd(r.fd);
    }
    return 100;
  });
  kb_bench::median_rate("acquire + close", "pairs/s", 1, [&] {
    for (int i = 0; i < 100; ++i) {
      kb::acquire_result r = kb::acquire_lock_file(path.c_str());
      if (r.status != kb::lock_status::acquired) ++failures;
      kb::close_fd(r.fd);
    }
    return 100;
  });
  kb_bench::median_rate("open + close (floor)", "pairs/s", 1, [&] {
    for (int i = 0; i < 100; ++i) close(open(path.c_str(), O_RDWR | O_CLOEXEC));
    return 100;
  });
  unlink(path.c_str());
  rmdir(dir.c_str());
  if (failures != 0) std::fprintf(stderr, "%d acquisitions failed\n", failures);
  return failures == 0 ? 0 : 1;
}
