#include "peregrine/graph/kronecker.h"

#include <cmath>

#include "peregrine/graph/rng.h"

namespace peregrine::graph {
namespace {

uint32_t threshold(double p) {
  double t = std::ldexp(p, 32);
  if (t >= 4294967295.0) return 0xffffffffu;
  if (t <= 0) return 0;
  return static_cast<uint32_t>(t);
}

}  // namespace

KroneckerSampler::KroneckerSampler(uint32_t scale, uint64_t seed, double a, double b, double c)
    : scale_(scale), seed_(seed), perm_(scale, seed) {
  double ab = a + b;
  double c_norm = c / (1.0 - ab);
  double a_norm = a / ab;
  thr_ab_ = threshold(ab);
  thr_c_norm_ = threshold(c_norm);
  thr_a_norm_ = threshold(a_norm);
}

std::pair<uint64_t, uint64_t> KroneckerSampler::edge(uint64_t i) const {
  CounterRng rng(seed_, i);
  uint64_t u = 0;
  uint64_t v = 0;
  for (uint32_t level = 0; level < scale_; ++level) {
    // One 64-bit draw gives the two 32-bit uniforms of this level.
    uint64_t r = rng.next();
    uint32_t r1 = static_cast<uint32_t>(r >> 32);
    uint32_t r2 = static_cast<uint32_t>(r);
    uint64_t row = r1 > thr_ab_ ? 1 : 0;
    uint64_t col = r2 > (row ? thr_c_norm_ : thr_a_norm_) ? 1 : 0;
    u |= row << level;
    v |= col << level;
  }
  return {perm_(u), perm_(v)};
}

}  // namespace peregrine::graph
