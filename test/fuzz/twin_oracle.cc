// The fuzz targets' side of scripts/twin-oracle.ts: spawn, frame, compare.
#include "twin_oracle.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef KB_SOURCE_DIR
#error "KB_SOURCE_DIR must name the repository root (test/fuzz/CMakeLists.txt defines it)"
#endif

extern char** environ;

namespace kb::fuzz {
namespace {

int to_child = -1;    // the oracle's stdin
int from_child = -1;  // the oracle's stdout
unsigned every = 0;   // 0: no oracle

[[noreturn]] void die(const char* what) noexcept {
  std::fprintf(stderr, "twin oracle: %s\n", what);
  std::abort();
}

void write_all(const std::uint8_t* p, std::size_t n) noexcept {
  while (n != 0) {
    const ssize_t w = ::write(to_child, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("the oracle stopped reading (did it crash? its stderr is above)");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// How long one reply may take, first one (Node + tsx starting) included.
constexpr int kReplyTimeoutMs = 120000;

void read_all(std::uint8_t* p, std::size_t n) noexcept {
  while (n != 0) {
    pollfd pfd{from_child, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, kReplyTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) die("no answer within 120 s");
    const ssize_t r = ::read(from_child, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("the oracle closed its output (did it crash? its stderr is above)");
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

std::uint32_t read_u32() noexcept {
  std::uint8_t b[4];
  read_all(b, 4);
  return std::uint32_t(b[0]) | std::uint32_t(b[1]) << 8 | std::uint32_t(b[2]) << 16 | std::uint32_t(b[3]) << 24;
}

void spawn() noexcept {
  int in[2], out[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0) die("pipe() failed");
  // A dead oracle must abort with a message, not kill the target by SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  const char* custom = std::getenv("KB_TWIN_ORACLE");
  const std::string command =
      custom != nullptr && *custom != 0
          ? std::string(custom)
          : std::string("cd '" KB_SOURCE_DIR "' && exec node --import tsx scripts/twin-oracle.ts");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  for (int fd : {in[0], in[1], out[0], out[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) die("cannot spawn /bin/sh for the oracle");
  ::close(in[0]);
  ::close(out[1]);
  to_child = in[1];
  from_child = out[0];
}

}  // namespace

void put_u32(bytes& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

void oracle_init(unsigned default_every) noexcept {
  const char* off = std::getenv("KB_FUZZ_ORACLE");
  if (off != nullptr && std::strcmp(off, "0") == 0) {
    std::fprintf(stderr, "twin oracle: off (KB_FUZZ_ORACLE=0): native = twin is not checked\n");
    return;
  }
  const char* n = std::getenv("KB_FUZZ_ORACLE_EVERY");
  every = n != nullptr && *n != 0 ? static_cast<unsigned>(std::strtoul(n, nullptr, 10)) : default_every;
  if (every == 0) every = 1;
  spawn();
  if (!oracle_call(bytes{'P'}).empty()) die("unexpected answer to ping");
  std::fprintf(stderr, "twin oracle: ready, checking one input in %u\n", every);
}

bool oracle_wants(const std::uint8_t* data, std::size_t size) noexcept {
  if (every == 0) return false;
  if (every == 1) return true;
  std::uint32_t h = 2166136261u;  // FNV-1a: the same input always falls in or out of the sample
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h % every == 0;
}

bytes oracle_call(const bytes& request) noexcept {
  bytes frame;
  frame.reserve(request.size() + 4);
  put_u32(frame, static_cast<std::uint32_t>(request.size()));
  frame.insert(frame.end(), request.begin(), request.end());
  write_all(frame.data(), frame.size());
  const std::uint32_t n = read_u32();
  if (n == 0xFFFFFFFFu) {
    const std::uint32_t m = read_u32();
    std::string text(m, '\0');
    read_all(reinterpret_cast<std::uint8_t*>(text.data()), m);
    std::fprintf(stderr, "twin oracle: the twin threw:\n%s\n", text.c_str());
    std::abort();
  }
  bytes reply(n);
  read_all(reply.data(), n);
  return reply;
}

namespace {
void print_escaped(const char* label, const std::uint8_t* p, std::size_t n, std::size_t mark) {
  std::fprintf(stderr, "%s (%zu bytes): \"", label, n);
  const std::size_t limit = n < 4096 ? n : 4096;
  for (std::size_t i = 0; i < limit; ++i) {
    if (i == mark) std::fputs("[>>]", stderr);
    const unsigned c = p[i];
    if (c == '\n')
      std::fputs("\\n", stderr);
    else if (c == '\t')
      std::fputs("\\t", stderr);
    else if (c == '\r')
      std::fputs("\\r", stderr);
    else if (c == '"' || c == '\\')
      std::fprintf(stderr, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      std::fprintf(stderr, "\\x%02x", c);
    else
      std::fputc(static_cast<int>(c), stderr);
  }
  std::fputs(limit < n ? "\"…\n" : "\"\n", stderr);
}
}  // namespace

void fail(const char* what, const std::uint8_t* input, std::size_t input_len, const bytes& expected,
          const bytes& actual) noexcept {
  std::size_t at = 0;
  while (at < expected.size() && at < actual.size() && expected[at] == actual[at]) ++at;
  std::fprintf(stderr, "\n==== FUZZ CHECK FAILED: %s (first difference at byte %zu, marked [>>])\n", what, at);
  print_escaped("input", input, input_len, static_cast<std::size_t>(-1));
  print_escaped("expected", expected.data(), expected.size(), at);
  print_escaped("actual", actual.data(), actual.size(), at);
  std::abort();
}

}  // namespace kb::fuzz
