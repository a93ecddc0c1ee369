// A test harness small enough to read in a minute, so the C++ suite needs
// nothing downloaded (simdutf tests/helpers/test.h). Each test file defines
// TEST(name) blocks and ends with KB_TEST_MAIN(); ctest runs the executable.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace kb_test {

struct registered_test {
  const char* name;
  std::function<void()> body;
};

inline std::vector<registered_test>& registry() {
  static std::vector<registered_test> tests;
  return tests;
}

inline int& failures() {
  static int count = 0;
  return count;
}

struct registrar {
  registrar(const char* name, std::function<void()> body) { registry().push_back({name, std::move(body)}); }
};

// Prints both byte strings as hex around the first difference, so a failing
// squash case shows where the output went wrong, not just that it did.
inline void print_diff(const std::string& actual, const std::string& expected) {
  std::size_t at = 0;
  while (at < actual.size() && at < expected.size() && actual[at] == expected[at]) ++at;
  std::fprintf(stderr, "    first difference at byte %zu (actual %zu bytes, expected %zu bytes)\n", at, actual.size(),
               expected.size());
  auto dump = [at](const char* label, const std::string& s) {
    std::size_t from = at > 16 ? at - 16 : 0;
    std::fprintf(stderr, "    %-8s", label);
    for (std::size_t i = from; i < s.size() && i < at + 16; ++i) {
      std::fprintf(stderr, i == at ? "[%02x]" : " %02x", static_cast<unsigned char>(s[i]));
    }
    std::fprintf(stderr, "\n");
  };
  dump("actual", actual);
  dump("expected", expected);
}

}  // namespace kb_test

#define KB_CONCAT2(a, b) a##b
#define KB_CONCAT(a, b) KB_CONCAT2(a, b)

#define TEST(name)                                                                              \
  static void KB_CONCAT(kb_test_fn_, name)();                                                   \
  static kb_test::registrar KB_CONCAT(kb_test_reg_, name)(#name, KB_CONCAT(kb_test_fn_, name)); \
  static void KB_CONCAT(kb_test_fn_, name)()

#define KB_FAIL_AT(...)                                    \
  do {                                                     \
    std::fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__); \
    std::fprintf(stderr, __VA_ARGS__);                     \
    std::fprintf(stderr, "\n");                            \
    ++kb_test::failures();                                 \
  } while (0)

#define ASSERT_TRUE(cond)                     \
  do {                                        \
    if (!(cond)) {                            \
      KB_FAIL_AT("expected true: %s", #cond); \
      return;                                 \
    }                                         \
  } while (0)

#define ASSERT_FALSE(cond) ASSERT_TRUE(!(cond))

#define ASSERT_EQ(actual, expected)                        \
  do {                                                     \
    auto&& kb_a = (actual);                                \
    auto&& kb_e = (expected);                              \
    if (!(kb_a == kb_e)) {                                 \
      KB_FAIL_AT("expected %s == %s", #actual, #expected); \
      return;                                              \
    }                                                      \
  } while (0)

// Byte-string equality with a hex diff on failure.
#define ASSERT_BYTES_EQ(actual, expected)                       \
  do {                                                          \
    std::string kb_a(actual);                                   \
    std::string kb_e(expected);                                 \
    if (kb_a != kb_e) {                                         \
      KB_FAIL_AT("bytes differ: %s vs %s", #actual, #expected); \
      kb_test::print_diff(kb_a, kb_e);                          \
      return;                                                   \
    }                                                           \
  } while (0)

#define KB_TEST_MAIN()                                                               \
  int main() {                                                                       \
    int failed_tests = 0;                                                            \
    for (auto& t : kb_test::registry()) {                                            \
      int before = kb_test::failures();                                              \
      t.body();                                                                      \
      bool ok = kb_test::failures() == before;                                       \
      if (!ok) ++failed_tests;                                                       \
      std::printf("%s %s\n", ok ? "ok  " : "FAIL", t.name);                          \
    }                                                                                \
    std::printf("%zu tests, %d failed\n", kb_test::registry().size(), failed_tests); \
    return failed_tests == 0 ? 0 : 1;                                                \
  }
