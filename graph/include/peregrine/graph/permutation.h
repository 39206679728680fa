// The vertex relabelling of the Graph500 generator: a keyed pseudo-random
// bijection on [0, 2^scale).
//
// Graph500 permutes vertex labels so that the Kronecker hubs (low ids) are
// scattered over the id space and thus over the adjacency file. A stored
// permutation table would cost 4 bytes per vertex of memory and a pass to
// build it; instead each label is mapped by rounds of xor-with-key,
// multiply-by-odd and xorshift, each of which is a bijection modulo 2^scale.
//
// Thread rules: pure value type: any number of threads may call operator()
// concurrently.
#pragma once

#include <cstdint>

#include "peregrine/graph/rng.h"

namespace peregrine::graph {

class LabelPermutation {
 public:
  LabelPermutation(uint32_t scale, uint64_t seed) {
    mask_ = scale >= 64 ? ~0ULL : (1ULL << scale) - 1;
    shift_ = scale / 2 > 0 ? scale / 2 : 1;
    CounterRng rng(seed, 0x7065726d75746521ULL);  // "permute!": a stream apart from the edges'
    for (int i = 0; i < kRounds; ++i) {
      key_[i] = rng.next() & mask_;
      mul_[i] = rng.next() | 1;  // odd, hence invertible modulo 2^scale
    }
  }

  uint64_t operator()(uint64_t x) const {
    for (int i = 0; i < kRounds; ++i) {
      x = (x ^ key_[i]) & mask_;
      x = (x * mul_[i]) & mask_;
      x ^= x >> shift_;
    }
    return x;
  }

 private:
  static constexpr int kRounds = 3;
  uint64_t mask_;
  uint32_t shift_;
  uint64_t key_[kRounds];
  uint64_t mul_[kRounds];
};

}  // namespace peregrine::graph
