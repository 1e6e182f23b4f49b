// src/runtime/tensor_descriptor.cpp — see tensor_descriptor.hpp.
//
// Every rule below is checked in tilejit before cuTensorMapEncodeTiled sees
// the values; the driver's own answer (CUDA_ERROR_INVALID_VALUE with no
// detail) is only the last line of defence. Sources: cuda.h's documentation of
// cuTensorMapEncodeTiled (CUDA 12/13 driver API, "Tensor Map Object
// Managment"); Triton's TensorDescriptor.__post_init__ and driver.c
// (fill_tma_descriptor: element strides 1, no interleave, L2 promotion 128 B).
#include "tilejit/runtime/tensor_descriptor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "cuda_driver.hpp"

namespace tilejit::runtime {

// The fixed parameter layout promised in the header.
struct TensorDescriptorLayout {
  using T = TensorDescriptor;
  static_assert(std::is_trivially_copyable_v<T> && std::is_standard_layout_v<T>);
  static_assert(alignof(T) == 64 && sizeof(T) == 320);
  static_assert(offsetof(T, map_) == 0 && offsetof(T, base_) == 128 && offsetof(T, shape_) == 136 &&
                offsetof(T, strides_) == 176 && offsetof(T, block_) == 216 && offsetof(T, dtype_) == 256 &&
                offsetof(T, rank_) == 257 && offsetof(T, swizzle_) == 258 && offsetof(T, oob_fill_) == 259 &&
                offsetof(T, l2_promotion_) == 260 && offsetof(T, has_map_) == 261 && offsetof(T, backend_) == 264 &&
                offsetof(T, ordinal_) == 268);
};

// The host map must be byte-compatible with the driver's.
static_assert(sizeof(CUtensorMap) == sizeof(TensorMap));

namespace {

constexpr const char* kWhat = "tensor descriptor";

// The TMA element type that copies `t`, or -1 when there is none. fp8 formats
// have no TMA type of their own: TMA moves bytes, so they travel as UINT8 (as
// in Triton). i1 (bool) is left out: its one-byte storage is an implementation
// detail tile code does not load through descriptors.
int tma_data_type(DType t) {
  switch (t) {
    case DType::i8: case DType::u8:
    case DType::f8e4nv: case DType::f8e5: case DType::f8e4b15: return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case DType::i16: case DType::u16: return CU_TENSOR_MAP_DATA_TYPE_UINT16;
    case DType::i32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case DType::u32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case DType::i64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case DType::u64: return CU_TENSOR_MAP_DATA_TYPE_UINT64;
    case DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::f64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case DType::i1: break;
  }
  return -1;
}

// "NaN request zero FMA" fill is only defined for TMA's float element types.
bool tma_float(DType t) { return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64; }

std::string dtype_name(DType t) {
  std::string_view n = name(t);
  return n == "?" ? fmt::format("<DType {}>", int(t)) : std::string(n);
}

[[noreturn]] void fail(const std::string& value, const char* rule) {
  throw InvalidArgument(fmt::format("{}: {}: {}", kWhat, value, rule));
}

// All checks of the header's list, in that order, before any driver call.
void validate(void* base, DType dtype, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides,
              const std::vector<std::int64_t>& block, const TensorDescriptor::Options& o) {
  const std::size_t rank = shape.size();
  if (rank < 1 || rank > std::size_t(TensorDescriptor::max_rank))
    fail(fmt::format("rank {} (shape {})", rank, shape), "rank must be 1..5");
  if (strides.size() != rank)
    fail(fmt::format("strides {} has {} entries for shape {} of rank {}", strides, strides.size(), shape, rank),
         "strides rank must equal shape rank");
  if (block.size() != rank)
    fail(fmt::format("block_shape {} has {} entries for shape {} of rank {}", block, block.size(), shape, rank),
         "block_shape rank must equal shape rank");

  if (tma_data_type(dtype) < 0)
    fail(fmt::format("dtype {}", dtype_name(dtype)),
         "dtype must be a TMA-copyable element type (i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, "
         "f8e4nv, f8e5, f8e4b15)");
  const std::int64_t es = size_bytes(dtype);

  const auto addr = reinterpret_cast<std::uintptr_t>(base);
  if (addr == 0) fail("base is null", "base must not be null");
  if (addr % 16 != 0) fail(fmt::format("base {:#x} (address mod 16 = {})", addr, addr % 16), "base must be 16-byte aligned");

  for (std::size_t i = 0; i < rank; ++i)
    if (shape[i] < 1 || shape[i] > TensorDescriptor::max_dim)
      fail(fmt::format("shape[{}] = {} (shape {})", i, shape[i], shape), "shape dims must be 1..2^32");

  if (strides[rank - 1] != 1)
    fail(fmt::format("strides[{}] = {} (strides {})", rank - 1, strides[rank - 1], strides),
         "last stride must be 1 (the innermost dim must be contiguous)");
  for (std::size_t i = 0; i + 1 < rank; ++i) {
    const std::int64_t s = strides[i];
    if (s < 1) fail(fmt::format("strides[{}] = {} (strides {})", i, s, strides), "strides must be >= 1");
    // s <= 2^40 here is enough to keep s * es (es <= 8) far from overflow.
    if (s >= TensorDescriptor::max_stride_bytes || s * es >= TensorDescriptor::max_stride_bytes)
      fail(fmt::format("strides[{}] = {} elements x {} bytes ({})", i, s, es, dtype_name(dtype)),
           "stride x element size must be < 2^40 bytes");
    if (s * es % 16 != 0)
      fail(fmt::format("strides[{}] = {} elements x {} bytes ({}) = {} bytes", i, s, es, dtype_name(dtype), s * es),
           "stride x element size must be a multiple of 16 bytes");
  }

  for (std::size_t i = 0; i < rank; ++i)
    if (block[i] < 1 || block[i] > TensorDescriptor::max_block)
      fail(fmt::format("block_shape[{}] = {} (block_shape {})", i, block[i], block), "block dims must be 1..256");
  const std::int64_t inner = block[rank - 1] * es;
  const std::string inner_value =
      fmt::format("block_shape[-1] = {} elements x {} bytes ({}) = {} bytes", block[rank - 1], es, dtype_name(dtype), inner);
  if (inner < 16) fail(inner_value, "block_shape[-1] x element size must be >= 16 bytes");
  if (inner % 16 != 0) fail(inner_value, "block_shape[-1] x element size must be a multiple of 16 bytes");

  if (static_cast<unsigned>(o.swizzle) > 3)
    fail(fmt::format("swizzle = {}", int(o.swizzle)), "swizzle must be none, b32, b64 or b128");
  if (const int span = TensorDescriptor::swizzle_bytes(o.swizzle); span != 0 && inner > span)
    fail(fmt::format("{} with a {}-byte swizzle", inner_value, span),
         "with a swizzle, block_shape[-1] x element size must be <= the swizzle span");
  if (static_cast<unsigned>(o.oob_fill) > 1)
    fail(fmt::format("oob_fill = {}", int(o.oob_fill)), "oob_fill must be zero or nan");
  if (o.oob_fill == TensorDescriptor::OobFill::nan && !tma_float(dtype))
    fail(fmt::format("oob_fill nan with dtype {}", dtype_name(dtype)),
         "NaN out-of-bounds fill needs a float element type TMA knows (f16, bf16, f32, f64)");
  if (static_cast<unsigned>(o.l2_promotion) > 3)
    fail(fmt::format("l2_promotion = {}", int(o.l2_promotion)), "l2_promotion must be none, b64, b128 or b256");
}

// TMA exists from sm_90 on, and only behind a driver that exports the encoder.
const detail::CudaDriver* tma_driver(const Device& device) {
  if (device.backend() != Backend::cuda || device.compute_capability() < 90) return nullptr;
  const detail::CudaDriver* d = detail::cuda_driver();
  return d && d->tensor_map_encode_tiled ? d : nullptr;
}

}  // namespace

TensorDescriptor::TensorDescriptor(const Device& device, void* base, DType dtype, const std::vector<std::int64_t>& shape,
                                   const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& block_shape,
                                   Options options) {
  validate(base, dtype, shape, strides, block_shape, options);
  base_ = base;
  dtype_ = dtype;
  rank_ = static_cast<std::uint8_t>(shape.size());
  for (int i = 0; i < rank_; ++i) shape_[i] = shape[i], strides_[i] = strides[i], block_[i] = block_shape[i];
  swizzle_ = options.swizzle;
  oob_fill_ = options.oob_fill;
  l2_promotion_ = options.l2_promotion;
  backend_ = device.backend();
  ordinal_ = device.ordinal();

  const detail::CudaDriver* d = tma_driver(device);
  if (!d) return;
  const TmaEncodeArgs a = tma_args();
  // The encoder fails with CUDA_ERROR_INVALID_CONTEXT on a thread with no
  // current context (seen on an H200, driver 580). Then make the device's
  // primary context current through Device itself, which tracks what it has
  // bound on this thread (an event create/destroy pair: no synchronisation).
  CUcontext current = nullptr;
  if (!d->ctx_get_current || d->ctx_get_current(&current) != CUDA_SUCCESS || current == nullptr)
    device.event_destroy(device.event_create());
  CUtensorMap map{};  // the driver wants 64-byte alignment; CUtensorMap carries its own
  const CUresult r = d->tensor_map_encode_tiled(
      &map, CUtensorMapDataType(a.data_type), a.rank, a.global_address, a.global_dim, a.global_strides, a.box_dim,
      a.element_strides, CUtensorMapInterleave(a.interleave), CUtensorMapSwizzle(a.swizzle),
      CUtensorMapL2promotion(a.l2_promotion), CUtensorMapFloatOOBfill(a.oob_fill));
  if (r != CUDA_SUCCESS)
    throw DriverError(fmt::format("cuTensorMapEncodeTiled failed: {} for {}", d->describe(r), to_string(*this)),
                      "cuTensorMapEncodeTiled", int(r));
  std::memcpy(map_.words, &map, sizeof map_.words);
  has_map_ = true;
}

TensorDescriptor::TensorDescriptor(const Device& device, void* base, DType dtype, const std::vector<std::int64_t>& shape,
                                   const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& block_shape)
    : TensorDescriptor(device, base, dtype, shape, strides, block_shape, Options{}) {}

std::int64_t TensorDescriptor::block_numel() const noexcept {
  if (rank_ == 0) return 0;
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= block_[i];
  return n;
}

TmaEncodeArgs TensorDescriptor::tma_args() const noexcept {
  TmaEncodeArgs a;
  if (rank_ == 0) return a;
  const int r = rank_;
  const std::uint64_t es = std::uint64_t(element_size());
  a.data_type = tma_data_type(dtype_);
  a.rank = unsigned(r);
  a.global_address = base_;
  for (int i = 0; i < r; ++i) {  // driver dim i = our dim r-1-i
    a.global_dim[i] = std::uint64_t(shape_[r - 1 - i]);
    a.box_dim[i] = std::uint32_t(block_[r - 1 - i]);
    a.element_strides[i] = 1;
  }
  for (int i = 1; i < r; ++i) a.global_strides[i - 1] = std::uint64_t(strides_[r - 1 - i]) * es;
  a.interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  a.swizzle = int(swizzle_);        // Swizzle's values are CUtensorMapSwizzle's
  a.l2_promotion = int(l2_promotion_);  // likewise CUtensorMapL2promotion
  a.oob_fill = oob_fill_ == OobFill::nan ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                         : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return a;
}

static_assert(int(TensorDescriptor::Swizzle::b32) == CU_TENSOR_MAP_SWIZZLE_32B &&
              int(TensorDescriptor::Swizzle::b64) == CU_TENSOR_MAP_SWIZZLE_64B &&
              int(TensorDescriptor::Swizzle::b128) == CU_TENSOR_MAP_SWIZZLE_128B);
static_assert(int(TensorDescriptor::L2Promotion::b64) == CU_TENSOR_MAP_L2_PROMOTION_L2_64B &&
              int(TensorDescriptor::L2Promotion::b128) == CU_TENSOR_MAP_L2_PROMOTION_L2_128B &&
              int(TensorDescriptor::L2Promotion::b256) == CU_TENSOR_MAP_L2_PROMOTION_L2_256B);

std::string to_string(const TensorDescriptor& d) {
  static constexpr const char* kSwizzle[] = {"none", "32B", "64B", "128B"};
  static constexpr const char* kL2[] = {"none", "64B", "128B", "256B"};
  const auto sw = static_cast<unsigned>(d.swizzle()), l2 = static_cast<unsigned>(d.l2_promotion());
  return fmt::format("TensorDescriptor({}, shape {}, strides {}, block {}, swizzle {}, oob {}, l2 {}, {})",
                     dtype_name(d.dtype()), d.shape(), d.strides(), d.block_shape(), sw < 4 ? kSwizzle[sw] : "?",
                     d.oob_fill() == TensorDescriptor::OobFill::nan ? "nan" : "zero", l2 < 4 ? kL2[l2] : "?",
                     d.has_tensor_map() ? "tma" : "no tma");
}

}  // namespace tilejit::runtime
