// kb::md5_stream and kb::md5 against RFC 1321's test suite and digests from
// an independent implementation (OpenSSL, via node:crypto, recorded once),
// at the lengths where padding changes shape: 55 is the longest input whose
// length fits in the last block, 56..63 need a second one, 64 is one whole block.
#include <cstdint>
#include <string>
#include <vector>

#include "core/md5.h"
#include "test.h"

namespace {

std::string hex_of(const void* data, std::size_t size) {
  std::uint8_t digest[16];
  kb::md5(data, size, digest);
  char hex[32];
  kb::md5_hex(digest, hex);
  return std::string(hex, 32);
}

std::string hex_of(const std::string& s) { return hex_of(s.data(), s.size()); }

// Bytes i*31+7: every byte value appears, and no two neighbouring blocks match.
std::vector<std::uint8_t> pattern(std::size_t n) {
  std::vector<std::uint8_t> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(i * 31 + 7);
  return bytes;
}

std::string streamed_hex(const std::uint8_t* data, const std::vector<std::size_t>& cuts, std::size_t size) {
  kb::md5_stream stream;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    stream.update(data + from, cut - from);
    from = cut;
  }
  stream.update(data + from, size - from);
  std::uint8_t digest[16];
  stream.digest(digest);
  char hex[32];
  kb::md5_hex(digest, hex);
  return std::string(hex, 32);
}

}  // namespace

TEST(rfc_1321_test_suite) {
  ASSERT_BYTES_EQ(hex_of(""), "d41d8cd98f00b204e9800998ecf8427e");
  ASSERT_BYTES_EQ(hex_of("a"), "0cc175b9c0f1b6a831c399e269772661");
  ASSERT_BYTES_EQ(hex_of("abc"), "900150983cd24fb0d6963f7d28e17f72");
  ASSERT_BYTES_EQ(hex_of("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  ASSERT_BYTES_EQ(hex_of("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
  ASSERT_BYTES_EQ(hex_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
                  "d174ab98d277d9f5a5611c2c9f419d9f");
  ASSERT_BYTES_EQ(hex_of("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
                  "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(a_million_as_matches_the_published_digest) {
  ASSERT_BYTES_EQ(hex_of(std::string(1000000, 'a')), "7707d6ae4e027c70eea2a935c2296f21");
}

TEST(boundary_lengths_of_repeated_a_match_openssl) {
  struct known {
    std::size_t size;
    const char* hex;
  };
  const known cases[] = {
      {0, "d41d8cd98f00b204e9800998ecf8427e"},   {1, "0cc175b9c0f1b6a831c399e269772661"},
      {55, "ef1772b6dff9a122358552954ad0df65"},  {56, "3b0c8ac703f828b04c6c197006d17218"},
      {63, "b06521f39153d618550606be297466d5"},  {64, "014842d480b571495a4a0363793f7367"},
      {65, "c743a45e0d2e6a95cb859adae0248435"},  {119, "8a7bd0732ed6a28ce75f6dabc90e1613"},
      {120, "5f61c0ccad4cac44c75ff505e1f1e537"}, {1 << 20, "7202826a7791073fe2787f0c94603278"},
  };
  for (const known& k : cases) ASSERT_BYTES_EQ(hex_of(std::string(k.size, 'a')), k.hex);
}

TEST(boundary_lengths_of_every_byte_value_match_openssl) {
  struct known {
    std::size_t size;
    const char* hex;
  };
  const known cases[] = {
      {1, "89e74e640b8c46257a29de0616794d5d"},       {55, "c9e512626618c9980ef21a96597af94c"},
      {56, "ecde7caa08e9f5657c863df107cac60a"},      {63, "2f0301069e1c40af7f6c8f843b1b13f2"},
      {64, "b6bf87c24b1bc334e2541387a92b981b"},      {65, "f168246f08b6134d66bd2a10343fa9f1"},
      {119, "d5dc3d8264de3aa24dee105910ee27fe"},     {120, "bcc139b3848923904860d1eefd6e5923"},
      {1 << 20, "3f2c8bd9cfde6550fdff4b36617c3261"},
  };
  for (const known& k : cases) {
    std::vector<std::uint8_t> bytes = pattern(k.size);
    ASSERT_BYTES_EQ(hex_of(bytes.data(), bytes.size()), k.hex);
  }
}

TEST(streaming_equals_one_shot_at_every_split_point) {
  for (std::size_t size : {0u, 1u, 63u, 64u, 65u, 130u, 200u}) {
    std::vector<std::uint8_t> bytes = pattern(size);
    const std::string whole = hex_of(bytes.data(), size);
    for (std::size_t cut = 0; cut <= size; ++cut) {
      ASSERT_BYTES_EQ(streamed_hex(bytes.data(), {cut}, size), whole);
    }
  }
}

TEST(streaming_equals_one_shot_at_every_pair_of_split_points) {
  const std::size_t size = 150;
  std::vector<std::uint8_t> bytes = pattern(size);
  const std::string whole = hex_of(bytes.data(), size);
  for (std::size_t first = 0; first <= size; ++first) {
    for (std::size_t second = first; second <= size; ++second) {
      ASSERT_BYTES_EQ(streamed_hex(bytes.data(), {first, second}, size), whole);
    }
  }
}

TEST(byte_at_a_time_equals_one_shot) {
  std::vector<std::uint8_t> bytes = pattern(1000);
  kb::md5_stream stream;
  for (std::uint8_t b : bytes) stream.update(&b, 1);
  std::uint8_t digest[16];
  stream.digest(digest);
  char hex[32];
  kb::md5_hex(digest, hex);
  ASSERT_BYTES_EQ(std::string(hex, 32), hex_of(bytes.data(), bytes.size()));
}

TEST(an_empty_update_with_a_null_pointer_changes_nothing) {
  kb::md5_stream stream;
  stream.update(nullptr, 0);
  stream.update("abc", 3);
  stream.update(nullptr, 0);
  std::uint8_t digest[16];
  stream.digest(digest);
  char hex[32];
  kb::md5_hex(digest, hex);
  ASSERT_BYTES_EQ(std::string(hex, 32), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(reset_starts_a_new_digest) {
  kb::md5_stream stream;
  stream.update("not this", 8);
  std::uint8_t digest[16];
  stream.digest(digest);
  stream.reset();
  stream.update("abc", 3);
  stream.digest(digest);
  char hex[32];
  kb::md5_hex(digest, hex);
  ASSERT_BYTES_EQ(std::string(hex, 32), "900150983cd24fb0d6963f7d28e17f72");
}

TEST(base64_is_padded_and_matches_node) {
  std::uint8_t digest[16];
  char text[24];
  kb::md5("abc", 3, digest);
  kb::md5_base64(digest, text);
  ASSERT_BYTES_EQ(std::string(text, 24), "kAFQmDzST7DWlj99KOF/cg==");
  kb::md5("", 0, digest);
  kb::md5_base64(digest, text);
  ASSERT_BYTES_EQ(std::string(text, 24), "1B2M2Y8AsgTpgAmY7PhCfg==");
}

KB_TEST_MAIN()
