// native/core/md5.h: MD5 (RFC 1321), streaming and one-shot, std only.
//
// Portable C++17 so that CMake builds it without Node; the binding may still
// prefer another implementation where measurement says so (see md5.cc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kb {

// Incremental MD5: update() any number of times, then digest() once.
// After digest() the state is spent; call reset() to hash something new.
class md5_stream {
 public:
  md5_stream() noexcept { reset(); }

  void reset() noexcept;
  void update(const void* data, std::size_t size) noexcept;
  // Writes the 16-byte digest and leaves the stream spent.
  void digest(std::uint8_t out[16]) noexcept;

 private:
  std::uint32_t state_[4];
  std::uint64_t total_;       // bytes fed so far
  std::uint8_t pending_[64];  // the tail of the input not yet a whole block
};

// One-shot MD5 of `size` bytes.
void md5(const void* data, std::size_t size, std::uint8_t out[16]) noexcept;

// Writes the 32 lowercase hex digits of `digest` (no NUL).
void md5_hex(const std::uint8_t digest[16], char out[32]) noexcept;

// Writes the 24 characters of `digest` in padded base64 (no NUL).
void md5_base64(const std::uint8_t digest[16], char out[24]) noexcept;

}  // namespace kb
