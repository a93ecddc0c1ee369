// native/core/squash_stream.h: the HTML squasher over a body that comes in
// pieces (docs/decisions/0049-squashing-streams.md). Plain C++17: no N-API,
// no allocation, no exceptions. The TypeScript twin's counterpart is the
// SquashStream class in src/native/twins/squash-html.ts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/squash.h"
#include "core/squash/state.h"

namespace kb {

// Feeding a body to a squash_stream in any number of chunks, cut anywhere,
// gives the bytes kb::squash_html gives the whole body. What the bytes so far
// decide is written at once; bytes whose fate the next ones decide (a tag
// name that may go on, a possible comment, a link that may be shortened)
// are held back, at most max_held of them, until a later feed or finish.
// A white-space run pending at the end of a chunk is held as state, not as
// bytes: it becomes one byte or none once its right-hand neighbour comes.
class squash_stream {
 public:
  // The most bytes held back between calls: a comment is decided within
  // squash::kCommentLookahead bytes, anything else within fewer.
  static constexpr std::size_t max_held = squash::kHoldMax;
  // What feed and finish return when `out_cap` is below their bound, or
  // after finish; nothing is read or written then.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // `opt.host` and `opt.path` must outlive the stream: it keeps the pointers.
  explicit squash_stream(const squash_options& opt) noexcept;

  // What feed may write for `len` bytes in (they and the bytes held back,
  // and slack for 16-byte stores), and what finish may write.
  static constexpr std::size_t feed_bound(std::size_t len) noexcept { return len + kCarry + 32; }
  static constexpr std::size_t finish_bound() noexcept { return kCarry + 32; }

  // Squashes `len` more bytes of the body into `out`; returns how many it
  // wrote (npos: out_cap below feed_bound(len), or finished).
  std::size_t feed(const std::uint8_t* in, std::size_t len, std::uint8_t* out, std::size_t out_cap) noexcept;

  // The body ends: writes what was held back; returns how many bytes (npos:
  // out_cap below finish_bound(), or finished already).
  std::size_t finish(std::uint8_t* out, std::size_t out_cap) noexcept;

  // Bytes held back now.
  std::size_t held() const noexcept { return carry_len_; }

 private:
  // Room for what is held back and as many bytes of the next chunk again, so
  // that one window over them decides everything held.
  static constexpr std::size_t kCarry = 2 * squash::kHoldMax;

  std::size_t window(const std::uint8_t* in, std::size_t len, std::uint8_t* out, std::size_t& o, bool final,
                     std::size_t& compact_from) noexcept;
  void keep(const std::uint8_t* from, std::size_t len, std::size_t p, std::size_t compact_from) noexcept;

  int level_;
  squash::link_target target_;
  squash::stream_state ss_;
  std::size_t carry_len_ = 0;
  bool finished_ = false;
  std::uint8_t carry_[kCarry];
};

}  // namespace kb
