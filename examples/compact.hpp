// examples/compact.hpp — stream compaction: the elements of x above a threshold, packed into out.
// A scan gives each survivor its place among its program's survivors; one atomic ticket per program (the
// running count) gives the program's block of out. Programs' blocks land in the order they take tickets, so out
// holds the survivors in an unspecified order of blocks (each block in index order); *count ends as the total.
// BLOCK may be any 2^a·3^b·5^c·7^d, but should be a multiple of 32 · num_warps so that its elements spread over
// every thread (96 is exact at 1 warp: the scan runs over 32 lanes x 3 registers). A block with few factors of 2
// (7^4 = 2401) puts all of it in every thread, and the code grows with it (2.3 MB of CUDA for 2401, which NVRTC
// takes minutes over). n = 0 needs no launch (a grid of 0 programs is refused; a grid of 1 leaves *count at 0).
#pragma once
#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

template <int BLOCK>
struct Compact {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> out, tj::Ptr<int> count, tj::Size n, tj::Scalar<float> threshold) const {
    auto offs = tj::program_id(0) * BLOCK + tj::arange<BLOCK>();
    auto v = tj::load(x + offs, offs < n, 0.0f);
    auto keep = (offs < n) & (v > threshold);
    auto place = tj::cumsum<0>(tj::cast<int>(keep));          // 1-based place among this program's survivors
    auto base = tj::atomic_add(count, tj::sum<0>(tj::cast<int>(keep)));  // this program's first slot in out
    tj::store(out + (base + place - 1), v, keep);
  }
};

}  // namespace examples
