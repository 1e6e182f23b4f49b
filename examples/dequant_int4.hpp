// examples/dequant_int4.hpp — 4-bit weights to f16, two to a byte, with a scale per group of outputs: the unpacking
// step of weight-only quantised inference (GPTQ / AWQ style, symmetric with zero point 8), written with tj::join /
// tj::interleave as a Triton kernel would write it with tl.interleave.
//
// Layout of the data:
//   w      [n_bytes] u8: byte i holds outputs 2i (low nibble) and 2i + 1 (high nibble), each q in [0, 16)
//   scale  [cdiv(2 n_bytes, GROUP)] f32: one scale per GROUP consecutive outputs
//   out    [2 n_bytes] f16: out[j] = (q_j - 8) * scale[j / GROUP]
// Grid: cdiv(n_bytes, BLOCK) programs, each BLOCK bytes -> 2 BLOCK outputs. BLOCK, GROUP: any 2^a·3^b·5^c·7^d.
#pragma once
#include <cstdint>

#include <tilejit/tilejit.hpp>

namespace examples {
namespace tj = tilejit;

template <int BLOCK, int GROUP = 128>
struct DequantInt4 {
  void operator()(tj::Ptr<std::uint8_t> w, tj::Ptr<float> scale, tj::Ptr<tj::f16> out, tj::Size n_bytes) const {
    auto i = tj::program_id(0) * BLOCK + tj::arange<BLOCK>();
    auto b = tj::cast<std::int32_t>(tj::load(w + i, i < n_bytes));
    auto q = tj::interleave(b & 15, b / 16) - 8;  // [2 BLOCK]: each byte's low nibble, then its high one
    auto o = tj::program_id(0) * (2 * BLOCK) + tj::arange<2 * BLOCK>();
    auto ok = o < n_bytes * 2;
    auto s = tj::load(scale + o / GROUP, ok);
    tj::store(out + o, tj::cast<tj::f16>(tj::cast<float>(q) * s), ok);
  }
};

}  // namespace examples
