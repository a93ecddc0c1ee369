// libFuzzer target for streaming MD5 (native/core/md5.cc): the digest of the
// data fed in pieces (split points from the input, empty pieces included)
// equals the one-shot digest, equals the digest after reset() and a second
// feed, and the hex and base64 forms match the bytes; on a hash-chosen
// sample (see twin_oracle.h) it also equals node:crypto's createHash('md5')
// and the TypeScript twin's md5() and Md5 fed the same pieces.
//
// Input: byte 0 = number of split points (mod 8), then one little-endian u16
// per split point (a piece length, clamped to what is left), then the data.
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/md5.h"
#include "twin_oracle.h"

namespace {

using kb::fuzz::bytes;
using u8 = std::uint8_t;

// The oracle round trip costs far more than hashing a few KiB (every input:
// a third of the executions per second; one in 8: 60%, test/fuzz/README.md).
// Every input a run keeps is replayed with the oracle on afterwards.
constexpr unsigned kOracleEvery = 8;

bytes digest_bytes(const u8 d[16]) { return bytes(d, d + 16); }

// Independent encoders for the two text forms.
bytes hex_of(const u8 d[16]) {
  static const char digits[] = "0123456789abcdef";
  bytes h;
  for (int i = 0; i < 16; ++i) h.push_back(digits[d[i] >> 4]), h.push_back(digits[d[i] & 15]);
  return h;
}

bytes base64_of(const u8 d[16]) {
  static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  bytes b;
  for (int i = 0; i < 16; i += 3) {
    const unsigned v =
        (unsigned(d[i]) << 16) | (i + 1 < 16 ? unsigned(d[i + 1]) << 8 : 0) | (i + 2 < 16 ? d[i + 2] : 0);
    b.push_back(a[(v >> 18) & 63]);
    b.push_back(a[(v >> 12) & 63]);
    b.push_back(i + 1 < 16 ? a[(v >> 6) & 63] : '=');
    b.push_back(i + 2 < 16 ? a[v & 63] : '=');
  }
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kb::fuzz::oracle_init(kOracleEvery);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const u8* input, std::size_t size) {
  std::size_t at = 0;
  const unsigned splits = size != 0 ? input[at++] % 8 : 0;
  std::size_t raw[8];
  for (unsigned i = 0; i < splits; ++i, at += 2) raw[i] = at + 1 < size ? input[at] | (input[at + 1] << 8) : 0;
  if (at > size) at = size;
  const std::size_t len = size - at;
  // The data in a buffer of its exact size, so ASan sees a read past its end.
  std::unique_ptr<u8[]> data(new u8[len]);
  if (len != 0) std::memcpy(data.get(), input + at, len);

  u8 one[16];
  kb::md5(data.get(), len, one);

  std::size_t pieces[8];
  kb::md5_stream s;
  std::size_t fed = 0;
  for (unsigned i = 0; i < splits; ++i) {
    pieces[i] = raw[i] < len - fed ? raw[i] : len - fed;
    s.update(data.get() + fed, pieces[i]);
    fed += pieces[i];
  }
  s.update(data.get() + fed, len - fed);
  u8 streamed[16];
  s.digest(streamed);
  if (std::memcmp(one, streamed, 16) != 0)
    kb::fuzz::fail("streamed != one-shot", input, size, digest_bytes(one), digest_bytes(streamed));

  s.reset();
  for (std::size_t i = 0; i < len; i += 61) s.update(data.get() + i, len - i < 61 ? len - i : 61);
  u8 again[16];
  s.digest(again);
  if (std::memcmp(one, again, 16) != 0)
    kb::fuzz::fail("after reset() != one-shot", input, size, digest_bytes(one), digest_bytes(again));

  char hex[32], b64[24];
  kb::md5_hex(one, hex);
  kb::md5_base64(one, b64);
  if (bytes(hex, hex + 32) != hex_of(one)) kb::fuzz::fail("md5_hex", input, size, hex_of(one), bytes(hex, hex + 32));
  if (bytes(b64, b64 + 24) != base64_of(one))
    kb::fuzz::fail("md5_base64", input, size, base64_of(one), bytes(b64, b64 + 24));

  if (kb::fuzz::oracle_wants(input, size)) {
    bytes req{'M'};
    kb::fuzz::put_u32(req, splits);
    for (unsigned i = 0; i < splits; ++i) kb::fuzz::put_u32(req, static_cast<std::uint32_t>(pieces[i]));
    req.insert(req.end(), data.get(), data.get() + len);
    const bytes reply = kb::fuzz::oracle_call(req);
    const char* names[] = {"twin md5()", "twin Md5 streamed", "node:crypto createHash('md5')"};
    for (int k = 0; k < 3; ++k) {
      const bytes ref(reply.begin() + 16 * k, reply.begin() + 16 * (k + 1));
      if (ref != digest_bytes(one)) {
        std::fprintf(stderr, "native md5 != %s\n", names[k]);
        kb::fuzz::fail("native md5 differs from a reference (expected: reference)", input, size, ref,
                       digest_bytes(one));
      }
    }
  }
  return 0;
}
