// Tests of tilejit/runtime/tensor_descriptor.hpp. Validation and metadata need
// no GPU; the last test encodes real maps and loads through them with TMA on a
// CUDA device of compute capability >= 9.0, and skips elsewhere.
#include <doctest/doctest.h>

#include <cuda.h>  // only for the driver's enum values

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tilejit/runtime/jit.hpp"
#include "tilejit/runtime/tensor_descriptor.hpp"

namespace rt = tilejit::runtime;
using tilejit::DType;
using tilejit::InvalidArgument;
using tilejit::TensorDescriptor;
using Dims = std::vector<std::int64_t>;
using Swizzle = TensorDescriptor::Swizzle;
using OobFill = TensorDescriptor::OobFill;
using L2 = TensorDescriptor::L2Promotion;

namespace {

// A well-aligned address that is never dereferenced: validation reads only the number.
void* const kBase = reinterpret_cast<void*>(std::uintptr_t(1) << 20);

// Runs `make`, which must throw InvalidArgument (not a DriverError: nothing
// may reach the driver) whose message holds `rule` and every `values` part.
// The interpreter, plus Device::best() where that is a GPU.
std::vector<rt::Device> devices() {
  std::vector<rt::Device> ds{rt::Device::interpreter()};
  if (auto b = rt::Device::best(); b.backend() != rt::Backend::interpreter) ds.push_back(b);
  return ds;
}

// Runs `make` on each device; it must throw InvalidArgument (not a
// DriverError: nothing may reach the driver) whose message holds `rule` and
// every `values` part.
void check_rejects(const std::function<void(const rt::Device&)>& make, const std::string& rule,
                   std::vector<std::string> values = {}) {
  for (const rt::Device& dev : devices()) {
    CAPTURE(rt::to_string(dev.backend()));
    std::string msg;
    try {
      make(dev);
    } catch (const InvalidArgument& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    REQUIRE_MESSAGE(!msg.empty(), "expected InvalidArgument for rule: " << rule);
    CHECK(msg.find(rule) != std::string::npos);
    for (const auto& v : values) CHECK_MESSAGE(msg.find(v) != std::string::npos, "value '" << v << "' not named");
  }
}

bool all_zero(const rt::TensorMap& m) {
  for (auto w : m.words)
    if (w != 0) return false;
  return true;
}

}  // namespace

TEST_CASE("tensor descriptor: every validation rule rejects its bad value with the rule in the message") {
  // Each case is tried on every device of devices(): the rules must hold
  // identically, before any driver call.
  auto make = [](void* base, DType t, Dims shape, Dims strides, Dims block, TensorDescriptor::Options o = {}) {
    return [=](const rt::Device& dev) { TensorDescriptor d(dev, base, t, shape, strides, block, o); };
  };
  SUBCASE("rank 0") { check_rejects(make(kBase, DType::f32, {}, {}, {}), "rank must be 1..5", {"rank 0"}); }
  SUBCASE("rank 6") {
    check_rejects(make(kBase, DType::f32, Dims(6, 4), {64, 64, 64, 64, 64, 1}, Dims(6, 4)), "rank must be 1..5",
                  {"rank 6"});
  }
  SUBCASE("strides rank differs") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {1}, {8, 8}), "strides rank must equal shape rank", {"1 entries"});
  }
  SUBCASE("block_shape rank differs") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {8, 1}, {1, 8, 8}), "block_shape rank must equal shape rank",
                  {"3 entries"});
  }
  SUBCASE("dtype i1 has no TMA type") {
    check_rejects(make(kBase, DType::i1, {64}, {1}, {16}), "dtype must be a TMA-copyable element type", {"dtype i1"});
  }
  SUBCASE("dtype outside the enum") {
    check_rejects(make(kBase, static_cast<DType>(99), {64}, {1}, {16}), "dtype must be a TMA-copyable element type",
                  {"<DType 99>"});
  }
  SUBCASE("null base") { check_rejects(make(nullptr, DType::f32, {64}, {1}, {16}), "base must not be null"); }
  SUBCASE("base 8 bytes off") {
    check_rejects(make(static_cast<char*>(kBase) + 8, DType::f32, {64}, {1}, {16}), "base must be 16-byte aligned",
                  {"0x100008", "mod 16 = 8"});
  }
  SUBCASE("shape dim 0") {
    check_rejects(make(kBase, DType::f32, {8, 0}, {8, 1}, {8, 8}), "shape dims must be 1..2^32", {"shape[1] = 0"});
  }
  SUBCASE("shape dim 2^32 + 1") {
    check_rejects(make(kBase, DType::f32, {(std::int64_t(1) << 32) + 1, 8}, {8, 1}, {8, 8}),
                  "shape dims must be 1..2^32", {"shape[0] = 4294967297"});
  }
  SUBCASE("last stride 2") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {16, 2}, {8, 8}), "last stride must be 1", {"strides[1] = 2"});
  }
  SUBCASE("stride 0 (broadcast)") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {0, 1}, {8, 8}), "strides must be >= 1", {"strides[0] = 0"});
  }
  SUBCASE("negative stride") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {-8, 1}, {8, 8}), "strides must be >= 1", {"strides[0] = -8"});
  }
  SUBCASE("stride not a multiple of 16 bytes") {
    // f16 row pitch of 100 elements = 200 bytes
    check_rejects(make(kBase, DType::f16, {64, 100}, {100, 1}, {16, 16}),
                  "stride x element size must be a multiple of 16 bytes", {"strides[0] = 100", "= 200 bytes"});
  }
  SUBCASE("stride of 2^40 bytes") {
    check_rejects(make(kBase, DType::f32, {2, 8}, {std::int64_t(1) << 38, 1}, {2, 8}),
                  "stride x element size must be < 2^40 bytes", {"strides[0] = 274877906944"});
  }
  SUBCASE("block dim 0") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {8, 1}, {0, 8}), "block dims must be 1..256", {"block_shape[0] = 0"});
  }
  SUBCASE("block dim 512") {
    check_rejects(make(kBase, DType::f32, {1024, 8}, {8, 1}, {512, 8}), "block dims must be 1..256",
                  {"block_shape[0] = 512"});
  }
  SUBCASE("inner block of 8 bytes") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {8, 1}, {8, 2}), "block_shape[-1] x element size must be >= 16 bytes",
                  {"block_shape[-1] = 2", "= 8 bytes"});
  }
  SUBCASE("inner block of 24 bytes") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {8, 1}, {8, 6}),
                  "block_shape[-1] x element size must be a multiple of 16 bytes", {"= 24 bytes"});
  }
  SUBCASE("inner block of 256 bytes with a 128-byte swizzle") {
    check_rejects(make(kBase, DType::f16, {256, 256}, {256, 1}, {64, 128}, {.swizzle = Swizzle::b128}),
                  "with a swizzle, block_shape[-1] x element size must be <= the swizzle span",
                  {"= 256 bytes", "128-byte swizzle"});
  }
  SUBCASE("inner block of 64 bytes with a 32-byte swizzle") {
    check_rejects(make(kBase, DType::bf16, {256, 256}, {256, 1}, {64, 32}, {.swizzle = Swizzle::b32}),
                  "with a swizzle, block_shape[-1] x element size must be <= the swizzle span",
                  {"= 64 bytes", "32-byte swizzle"});
  }
  SUBCASE("swizzle outside the enum") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {8, 1}, {8, 8}, {.swizzle = static_cast<Swizzle>(7)}),
                  "swizzle must be none, b32, b64 or b128", {"swizzle = 7"});
  }
  SUBCASE("NaN fill of an integer type") {
    check_rejects(make(kBase, DType::i32, {8, 8}, {8, 1}, {8, 8}, {.oob_fill = OobFill::nan}),
                  "NaN out-of-bounds fill needs a float element type TMA knows", {"dtype i32"});
  }
  SUBCASE("NaN fill of fp8 (copied as u8)") {
    check_rejects(make(kBase, DType::f8e4nv, {64, 64}, {64, 1}, {16, 16}, {.oob_fill = OobFill::nan}),
                  "NaN out-of-bounds fill needs a float element type TMA knows", {"dtype f8e4nv"});
  }
  SUBCASE("oob_fill outside the enum") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {8, 1}, {8, 8}, {.oob_fill = static_cast<OobFill>(2)}),
                  "oob_fill must be zero or nan", {"oob_fill = 2"});
  }
  SUBCASE("l2_promotion outside the enum") {
    check_rejects(make(kBase, DType::f32, {8, 8}, {8, 1}, {8, 8}, {.l2_promotion = static_cast<L2>(4)}),
                  "l2_promotion must be none, b64, b128 or b256", {"l2_promotion = 4"});
  }
}

TEST_CASE("tensor descriptor: good descriptors on the interpreter keep their metadata and have no map") {
  const rt::Device dev = rt::Device::interpreter();
  const std::int64_t M = 100, K = 72, pitch = 80;  // f16 pitch 160 bytes
  void* p = dev.alloc(std::size_t(1) << 16);
  TensorDescriptor d(dev, p, DType::f16, {M, K}, {pitch, 1}, {64, 32},
                     {.swizzle = Swizzle::b64, .oob_fill = OobFill::nan, .l2_promotion = L2::b256});
  CHECK(d.backend() == rt::Backend::interpreter);
  CHECK(d.device_ordinal() == 0);
  CHECK(d.base() == p);
  CHECK(d.dtype() == DType::f16);
  CHECK(d.element_size() == 2);
  CHECK(d.rank() == 2);
  CHECK(Dims(d.shape().begin(), d.shape().end()) == Dims{M, K});
  CHECK(Dims(d.strides().begin(), d.strides().end()) == Dims{pitch, 1});
  CHECK(Dims(d.block_shape().begin(), d.block_shape().end()) == Dims{64, 32});
  CHECK(d.block_numel() == 64 * 32);
  CHECK(d.block_bytes() == 64 * 32 * 2);
  CHECK(d.swizzle() == Swizzle::b64);
  CHECK(d.oob_fill() == OobFill::nan);
  CHECK(d.l2_promotion() == L2::b256);
  CHECK_FALSE(d.has_tensor_map());
  CHECK(all_zero(d.tensor_map()));
  CHECK(rt::to_string(d) ==
        "TensorDescriptor(f16, shape [100, 72], strides [80, 1], block [64, 32], swizzle 64B, oob nan, l2 256B, no tma)");

  // A copy is a plain byte copy: the type can travel as a kernel parameter.
  static_assert(std::is_trivially_copyable_v<TensorDescriptor> && alignof(TensorDescriptor) == 64);
  TensorDescriptor copy;
  std::memcpy(static_cast<void*>(&copy), &d, sizeof d);
  CHECK(copy.base() == p);
  CHECK(rt::to_string(copy) == rt::to_string(d));

  SUBCASE("defaults: no swizzle, zero fill, 128-byte L2 promotion (Triton's)") {
    TensorDescriptor e(dev, p, DType::f32, {M * pitch / 2}, {1}, {4});
    CHECK(e.swizzle() == Swizzle::none);
    CHECK(e.oob_fill() == OobFill::zero);
    CHECK(e.l2_promotion() == L2::b128);
    CHECK(e.rank() == 1);
  }
  SUBCASE("limits are inclusive: rank 5, block dims 256, a dim of 2^32, 128 B under a 128B swizzle") {
    TensorDescriptor e(dev, p, DType::u8, {2, 3, 4, 5, 256}, {3 * 4 * 5 * 256, 4 * 5 * 256, 5 * 256, 256, 1},
                       {1, 1, 1, 1, 128}, {.swizzle = Swizzle::b128});
    CHECK(e.rank() == 5);
    TensorDescriptor big(dev, p, DType::f32, {std::int64_t(1) << 32, 4}, {4, 1}, {256, 4});
    CHECK(big.shape()[0] == std::int64_t(1) << 32);
    CHECK(big.block_shape()[0] == 256);
  }
  SUBCASE("fp8 and integer types, NPOT blocks") {
    for (DType t : {DType::f8e4nv, DType::f8e5, DType::i8, DType::i32, DType::u64, DType::bf16, DType::f64}) {
      CAPTURE(tilejit::name(t));
      const std::int64_t inner = 96 / tilejit::size_bytes(t);  // 96-byte blocks rows: NPOT, a multiple of 16
      TensorDescriptor e(dev, p, t, {M, 2 * inner}, {2 * inner, 1}, {48, inner});
      CHECK(e.dtype() == t);
      CHECK(e.block_bytes() == 48 * 96);
      CHECK_FALSE(e.has_tensor_map());
    }
  }
  SUBCASE("an empty descriptor describes nothing") {
    TensorDescriptor e;
    CHECK(e.rank() == 0);
    CHECK(e.shape().empty());
    CHECK(e.block_numel() == 0);
    CHECK_FALSE(e.has_tensor_map());
    CHECK(e.tma_args().rank == 0);
  }
  dev.free(p);
}

TEST_CASE("tensor descriptor: swizzle_of_bytes inverts swizzle_bytes") {
  for (Swizzle sw : {Swizzle::b32, Swizzle::b64, Swizzle::b128})
    CHECK(TensorDescriptor::swizzle_of_bytes(TensorDescriptor::swizzle_bytes(sw)) == sw);
  static_assert(TensorDescriptor::swizzle_of_bytes(64) == Swizzle::b64);
  for (int bytes : {0, 16, 48, 96, 256}) CHECK(TensorDescriptor::swizzle_of_bytes(bytes) == Swizzle::none);
}

TEST_CASE("tensor descriptor: tma_args reverses dims to the driver's innermost-first order, strides in bytes") {
  const rt::Device dev = rt::Device::interpreter();
  // f32 [B=4, M=100, K=72], rows padded to 80 elements (320 bytes).
  TensorDescriptor d(dev, kBase, DType::f32, {4, 100, 72}, {100 * 80, 80, 1}, {2, 16, 8},
                     {.swizzle = Swizzle::b32, .oob_fill = OobFill::nan, .l2_promotion = L2::b64});
  const rt::TmaEncodeArgs a = d.tma_args();
  CHECK(a.data_type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  CHECK(a.rank == 3);
  CHECK(a.global_address == kBase);
  CHECK(a.global_dim[0] == 72);
  CHECK(a.global_dim[1] == 100);
  CHECK(a.global_dim[2] == 4);
  CHECK(a.global_dim[3] == 0);
  CHECK(a.global_strides[0] == 80 * 4);
  CHECK(a.global_strides[1] == 100 * 80 * 4);
  CHECK(a.global_strides[2] == 0);
  CHECK(a.box_dim[0] == 8);
  CHECK(a.box_dim[1] == 16);
  CHECK(a.box_dim[2] == 2);
  CHECK(a.box_dim[3] == 0);
  for (int i = 0; i < 3; ++i) CHECK(a.element_strides[i] == 1);
  CHECK(a.interleave == CU_TENSOR_MAP_INTERLEAVE_NONE);
  CHECK(a.swizzle == CU_TENSOR_MAP_SWIZZLE_32B);
  CHECK(a.l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_64B);
  CHECK(a.oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);

  SUBCASE("element types: fp8 travels as UINT8, zero fill is FILL_NONE") {
    auto type_of = [&](DType t) {
      TensorDescriptor e(dev, kBase, t, {64, 64}, {64, 1}, {16, 16});
      CHECK(e.tma_args().oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      return e.tma_args().data_type;
    };
    CHECK(type_of(DType::f16) == CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    CHECK(type_of(DType::bf16) == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    CHECK(type_of(DType::f64) == CU_TENSOR_MAP_DATA_TYPE_FLOAT64);
    CHECK(type_of(DType::f8e4nv) == CU_TENSOR_MAP_DATA_TYPE_UINT8);
    CHECK(type_of(DType::f8e5) == CU_TENSOR_MAP_DATA_TYPE_UINT8);
    CHECK(type_of(DType::i8) == CU_TENSOR_MAP_DATA_TYPE_UINT8);
    CHECK(type_of(DType::i16) == CU_TENSOR_MAP_DATA_TYPE_UINT16);
    CHECK(type_of(DType::i32) == CU_TENSOR_MAP_DATA_TYPE_INT32);
    CHECK(type_of(DType::u32) == CU_TENSOR_MAP_DATA_TYPE_UINT32);
    CHECK(type_of(DType::i64) == CU_TENSOR_MAP_DATA_TYPE_INT64);
    CHECK(type_of(DType::u64) == CU_TENSOR_MAP_DATA_TYPE_UINT64);
  }
  SUBCASE("rank 1 has no strides") {
    TensorDescriptor e(dev, kBase, DType::bf16, {1000}, {1}, {64}, {.swizzle = Swizzle::b128});
    const auto b = e.tma_args();
    CHECK(b.rank == 1);
    CHECK(b.global_dim[0] == 1000);
    CHECK(b.box_dim[0] == 64);
    CHECK(b.global_strides[0] == 0);
    CHECK(b.swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  }
}

// ---- on the GPU ------------------------------------------------------------

namespace {

// One CTA loads one BR x BC f32 block through the descriptor's map with TMA
// (cp.async.bulk.tensor + mbarrier) and copies it out, followed by four
// metadata words read from the descriptor parameter. The kernel takes the
// whole TensorDescriptor by value (its documented layout), so this also checks
// that the map sits at offset 0 and the metadata at its offsets.
const char* kTmaLoad = R"(
struct __align__(64) Desc {
  unsigned long long map[16];
  void* base;
  long long shape[5], strides[5], block[5];
  unsigned char dtype, rank, swizzle, oob_fill, l2, has_map;
};
#define BR 32
#define BC 16
extern "C" __global__ void tma_load_2d(const __grid_constant__ Desc desc, float* out, int c_inner, int c_outer) {
  __shared__ __align__(128) float tile[BR * BC];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned sbar = (unsigned)__cvta_generic_to_shared(&bar);
  const unsigned stile = (unsigned)__cvta_generic_to_shared(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(sbar), "r"(BR * BC * 4) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(stile), "l"(reinterpret_cast<unsigned long long>(&desc.map)), "r"(c_inner), "r"(c_outer), "r"(sbar)
                 : "memory");
  }
  unsigned done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(sbar) : "memory");
  for (int i = threadIdx.x; i < BR * BC; i += blockDim.x) out[i] = tile[i];
  if (threadIdx.x == 0) {
    out[BR * BC + 0] = (float)desc.shape[0];
    out[BR * BC + 1] = (float)desc.shape[1];
    out[BR * BC + 2] = (float)desc.block[0];
    out[BR * BC + 3] = (float)desc.rank;
  }
}
)";

}  // namespace

TEST_CASE("tensor descriptor: a real map on a CUDA device loads the right block with TMA") {
  const rt::Device dev = rt::Device::best();
  if (dev.backend() != rt::Backend::cuda) {
    MESSAGE("no CUDA device: skipping the TMA descriptor test (", rt::Device::cuda_unavailable_reason(), ")");
    return;
  }
  constexpr int BR = 32, BC = 16;
  const std::int64_t M = 100, K = 72, pitch = 80;  // pitch columns 72..79 are outside the tensor
  std::vector<float> host(std::size_t(M * pitch));
  for (std::int64_t r = 0; r < M; ++r)
    for (std::int64_t c = 0; c < pitch; ++c) host[std::size_t(r * pitch + c)] = c < K ? float(r * 1000 + c) : -1.0f;
  void* x = dev.alloc(host.size() * sizeof(float));
  dev.copy_to_device(x, host.data(), host.size() * sizeof(float));

  TensorDescriptor zero(dev, x, DType::f32, {M, K}, {pitch, 1}, {BR, BC});
  TensorDescriptor nan(dev, x, DType::f32, {M, K}, {pitch, 1}, {BR, BC}, {.oob_fill = OobFill::nan});
  if (dev.compute_capability() < 90) {
    MESSAGE("CUDA device of compute capability ", dev.compute_capability(), ": no TMA, descriptors keep metadata only");
    CHECK_FALSE(zero.has_tensor_map());
    CHECK(all_zero(zero.tensor_map()));
    dev.free(x);
    return;
  }
  REQUIRE(zero.has_tensor_map());
  REQUIRE(nan.has_tensor_map());
  CHECK_FALSE(all_zero(zero.tensor_map()));
  CHECK(std::memcmp(&zero.tensor_map(), &nan.tensor_map(), sizeof(rt::TensorMap)) != 0);

  // Encoding is a pure function of the arguments, also on a thread where no
  // context is current yet.
  rt::TensorMap other{};
  std::thread([&] {
    TensorDescriptor again(dev, x, DType::f32, {M, K}, {pitch, 1}, {BR, BC});
    other = again.tensor_map();
  }).join();
  CHECK(std::memcmp(&other, &zero.tensor_map(), sizeof other) == 0);

  // Validation still comes first on the GPU: a bad value never reaches the driver.
  CHECK_THROWS_AS(TensorDescriptor(dev, x, DType::f32, {M, K}, {pitch, 1}, {BR, 2}), InvalidArgument);

  rt::JitRequest req;
  req.source = kTmaLoad;
  req.name = "tma_load_2d.cu";
  req.arch = dev.arch();
  const rt::Binary bin = rt::compile(req).binary;
  const rt::Function f = dev.load(bin, "tma_load_2d");
  const std::size_t out_n = BR * BC + 4;
  void* out = dev.alloc(out_n * sizeof(float));

  struct Case {
    const TensorDescriptor* d;
    int row0, col0;
  };
  for (Case c : {Case{&zero, 32, 16}, Case{&zero, 96, 64}, Case{&nan, 96, 64}, Case{&nan, 0, 0}}) {
    const bool nan_fill = c.d == &nan;
    CAPTURE(nan_fill);
    CAPTURE(c.row0);
    CAPTURE(c.col0);
    dev.memset(out, 0x55, out_n * sizeof(float));
    void* desc_arg = const_cast<TensorDescriptor*>(c.d);
    int c_inner = c.col0, c_outer = c.row0;  // TMA coordinates are innermost first
    void* args[] = {desc_arg, &out, &c_inner, &c_outer};
    rt::LaunchDims dims;
    dims.block[0] = 128;
    dev.launch(f, dims, {}, args);
    dev.synchronize();
    std::vector<float> got(out_n);
    dev.copy_to_host(got.data(), out, out_n * sizeof(float));
    int bad = 0;
    for (int i = 0; i < BR; ++i)
      for (int j = 0; j < BC; ++j) {
        const std::int64_t r = c.row0 + i, col = c.col0 + j;
        const float v = got[std::size_t(i * BC + j)];
        const bool in = r < M && col < K;
        const bool ok = in ? v == float(r * 1000 + col) : (nan_fill ? std::isnan(v) : v == 0.0f);
        if (!ok && bad++ < 5) MESSAGE("block (", i, ", ", j, ") = tensor (", r, ", ", col, "): got ", v);
      }
    CHECK(bad == 0);
    CHECK(got[BR * BC + 0] == float(M));
    CHECK(got[BR * BC + 1] == float(K));
    CHECK(got[BR * BC + 2] == float(BR));
    CHECK(got[BR * BC + 3] == 2.0f);
  }
  dev.free(out);
  dev.free(x);
}
