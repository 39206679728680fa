// The Graph500 Kronecker edge sampler (initiator A=0.57, B=0.19, C=0.19).
//
// edge(i) returns the i-th sampled edge, already relabelled, as a pure
// function of (scale, seed, i), following the Graph500 reference: at each of
// `scale` levels pick a quadrant of the adjacency matrix with probabilities
// A, B, C, D = 1-A-B-C. Self-loops and duplicates are produced as sampled;
// the CSR builder drops them.
//
// Thread rules: immutable after construction: safe to share between
// generating threads.
#pragma once

#include <cstdint>
#include <utility>

#include "peregrine/graph/permutation.h"

namespace peregrine::graph {

class KroneckerSampler {
 public:
  KroneckerSampler(uint32_t scale, uint64_t seed, double a = 0.57, double b = 0.19, double c = 0.19);

  // The i-th edge (u, v), labels in [0, 2^scale).
  std::pair<uint64_t, uint64_t> edge(uint64_t i) const;

 private:
  uint32_t scale_;
  uint64_t seed_;
  LabelPermutation perm_;
  // Thresholds on 32-bit uniforms, as in the reference code:
  // row bit = r1 > A+B; column bit = r2 > (row ? C/(C+D) : A/(A+B)).
  uint32_t thr_ab_;
  uint32_t thr_c_norm_;
  uint32_t thr_a_norm_;
};

}  // namespace peregrine::graph
