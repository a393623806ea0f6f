// A small seeded random source (SplitMix64) whose sequence is the same on every platform and
// standard library, so a seed names the same case and the same fault schedule everywhere
// (std::uniform_int_distribution's algorithm is unspecified).
#pragma once

#include <cstdint>
#include <vector>

namespace oe::crash {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); 0 when n is 0.
  int below(int n) { return n <= 0 ? 0 : static_cast<int>(next() % static_cast<uint64_t>(n)); }
  // Uniform in [lo, hi].
  int range(int lo, int hi) { return lo + below(hi - lo + 1); }
  // True with probability percent/100.
  bool chance(int percent) { return below(100) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& from) {
    return from[static_cast<size_t>(below(static_cast<int>(from.size())))];
  }

 private:
  uint64_t state_;
};

}  // namespace oe::crash
