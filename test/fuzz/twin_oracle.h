// test/fuzz/twin_oracle.h: the TypeScript twins as an oracle inside the fuzz
// targets. One `node --import tsx scripts/twin-oracle.ts` child per target
// process, spawned on first use and fed length-prefixed frames over pipes
// (the protocol is described at the top of scripts/twin-oracle.ts).
//
// Environment:
//   KB_FUZZ_ORACLE=0          no oracle: native = twin is not checked
//   KB_FUZZ_ORACLE_EVERY=N    check one input in N (chosen by a hash of the
//                             input, so a failing input fails again when it is
//                             replayed alone); 1 checks every input
//   KB_TWIN_ORACLE="cmd …"    the command to run instead of the default
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kb::fuzz {

using bytes = std::vector<std::uint8_t>;

// Starts the oracle and waits until it answers, unless KB_FUZZ_ORACLE=0.
// `default_every` is the sampling rate when KB_FUZZ_ORACLE_EVERY is unset.
// Aborts with a message when the child cannot be started or does not answer:
// a fuzz run that silently skipped the comparison would prove nothing.
void oracle_init(unsigned default_every) noexcept;

// True when this input is one the oracle checks (oracle on, and the input's
// hash falls in the sample).
bool oracle_wants(const std::uint8_t* data, std::size_t size) noexcept;

// One request → one reply. Aborts (printing the twin's error) when the
// oracle fails or the pipe breaks.
bytes oracle_call(const bytes& request) noexcept;

// Appends a little-endian u32.
void put_u32(bytes& out, std::uint32_t v);

// Prints `what`, then both byte strings as escaped text with the first
// difference marked, then aborts (so libFuzzer saves the input).
[[noreturn]] void fail(const char* what, const std::uint8_t* input, std::size_t input_len, const bytes& expected,
                       const bytes& actual) noexcept;

}  // namespace kb::fuzz
