// tilejit/runtime/tensor_descriptor.hpp — host-side tensor descriptors: a
// strided global tensor plus the block (tile) shape a kernel loads and stores
// through it, encoded once on the host into a TMA tensor map
// (cuTensorMapEncodeTiled) and passed by value to kernels.
//
//   // A: M x K row-major bf16, loaded in 128 x 64 blocks (128 B rows, 128B swizzle)
//   tj::TensorDescriptor a(dev, a_ptr, tj::DType::bf16, {M, K}, {K, 1}, {128, 64},
//                          {.swizzle = tj::TensorDescriptor::Swizzle::b128});
//
// Semantics follow Triton's tensor descriptors (`TensorDescriptor.from_tensor`
// on the host, `desc.load([i, j])` in a kernel): dims are listed outermost
// first (shape [M, K] for a row-major M x K matrix), strides are in elements,
// and a block at an offset that runs past `shape` is read with the out-of-bounds
// elements filled (zero or NaN) and written with them dropped.
//
// Units: shape, strides and block_shape are element counts; alignment, swizzle
// spans and every "bytes" in a rule are bytes. Rules come from the CUDA driver
// API documentation of cuTensorMapEncodeTiled (cuda.h, "Tensor Map Object
// Managment") and Triton's host-side checks; each broken rule is an
// InvalidArgument naming the value and the rule, raised before anything reaches
// the driver.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tilejit/core/dtype.hpp"
#include "tilejit/core/error.hpp"
#include "tilejit/runtime/device.hpp"

namespace tilejit::runtime {

/// The 128 opaque bytes of a CUDA `CUtensorMap` (CU_TENSOR_MAP_NUM_QWORDS = 16
/// 64-bit words). The driver requires the map's address to be 64-byte aligned;
/// a kernel receives it as a `const __grid_constant__` parameter and hands its
/// generic address to `cp.async.bulk.tensor` (PTX ISA, "Tensor copy").
struct alignas(64) TensorMap {
  std::uint64_t words[16] = {};
};
static_assert(sizeof(TensorMap) == 128 && alignof(TensorMap) == 64);

/// Arguments of one cuTensorMapEncodeTiled call, in the driver's convention:
/// dimension 0 is the INNERMOST (contiguous) one, i.e. the reverse of
/// TensorDescriptor's outermost-first order. Enum fields hold the values of the
/// driver's enums (CUtensorMapDataType, CUtensorMapInterleave,
/// CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill) so that
/// this header needs no cuda.h. Entries past `rank` are 0.
struct TmaEncodeArgs {
  int data_type = 0;                     ///< CUtensorMapDataType
  unsigned rank = 0;                     ///< tensorRank, 1..5
  void* global_address = nullptr;        ///< globalAddress (the base)
  std::uint64_t global_dim[5] = {};      ///< globalDim, elements, innermost first
  std::uint64_t global_strides[4] = {};  ///< globalStrides, BYTES, of dims 1..rank-1 (dim 0 is contiguous)
  std::uint32_t box_dim[5] = {};         ///< boxDim, elements, innermost first
  std::uint32_t element_strides[5] = {}; ///< elementStrides: always 1 (every element of the box)
  int interleave = 0;                    ///< CU_TENSOR_MAP_INTERLEAVE_NONE: always
  int swizzle = 0;                       ///< CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B
  int l2_promotion = 0;                  ///< CUtensorMapL2promotion: 0 none, 1 64B, 2 128B, 3 256B
  int oob_fill = 0;                      ///< CUtensorMapFloatOOBfill: 0 zeros, 1 NaN (NAN_REQUEST_ZERO_FMA)
};

/// A strided tensor in global memory and the block shape moved per access.
///
/// Built once on the host, validated, and on a device with TMA (CUDA, compute
/// capability >= 9.0, a driver exporting cuTensorMapEncodeTiled) encoded into a
/// TensorMap. Elsewhere (the interpreter, HIP, CUDA below sm_90) the same
/// validation runs and the metadata is kept — the interpreter and non-TMA code
/// paths execute descriptor loads from base/shape/strides — but
/// has_tensor_map() is false. The rules are the same everywhere, so a
/// descriptor that validates on the interpreter encodes on a Hopper GPU.
///
/// The object is trivially copyable, standard-layout and 64-byte aligned, with
/// the TensorMap first (offset 0) and fixed offsets after it (checked by
/// static_asserts in tensor_descriptor.cpp), so generated code can take it, or
/// its map alone, by value as a `__grid_constant__` kernel parameter:
///   offset   0  TensorMap (128 B)        offset 256  DType dtype (1 B)
///   offset 128  void* base               offset 257  rank (1 B)
///   offset 136  int64 shape[5]           offset 258  swizzle, oob_fill, l2_promotion (1 B each)
///   offset 176  int64 strides[5]         offset 261  has_tensor_map (1 B)
///   offset 216  int64 block_shape[5]     offset 264  Backend (4 B), 268 device ordinal (4 B); size 320
/// It does not own the memory at `base` and does not keep the Device alive.
class alignas(64) TensorDescriptor {
 public:
  static constexpr int max_rank = 5;   ///< TMA's maximum tensorRank
  static constexpr int max_block = 256;  ///< largest boxDim entry
  static constexpr std::int64_t max_dim = std::int64_t(1) << 32;        ///< largest globalDim entry
  static constexpr std::int64_t max_stride_bytes = std::int64_t(1) << 40;  ///< globalStrides must be below this

  /// Shared-memory swizzle of the loaded block (CUtensorMapSwizzle): 16-byte
  /// chunks are permuted within a 32-, 64- or 128-byte span. The block's
  /// inner row, block_shape[-1] x element size, must not exceed the span; the
  /// shared-memory destination must be aligned to the swizzle's repeat
  /// (128B swizzle: 1024 B), which is the kernel's concern.
  enum class Swizzle : std::uint8_t { none = 0, b32 = 1, b64 = 2, b128 = 3 };
  /// Value of out-of-bounds elements on loads: zeros, or a NaN that turns a
  /// following FMA into zero (CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  /// float element types only). Stores always drop out-of-bounds elements.
  enum class OobFill : std::uint8_t { zero = 0, nan = 1 };
  /// L2 sector promotion of TMA reads (CUtensorMapL2promotion). Triton uses 128 B.
  enum class L2Promotion : std::uint8_t { none = 0, b64 = 1, b128 = 2, b256 = 3 };

  struct Options {
    Swizzle swizzle = Swizzle::none;
    OobFill oob_fill = OobFill::zero;
    L2Promotion l2_promotion = L2Promotion::b128;
  };

  /// Bytes of a swizzle span: 0, 32, 64, 128.
  static constexpr int swizzle_bytes(Swizzle s) {
    return s == Swizzle::b32 ? 32 : s == Swizzle::b64 ? 64 : s == Swizzle::b128 ? 128 : 0;
  }
  /// The swizzle whose span is `bytes` (swizzle_bytes' inverse): b32, b64, b128 for 32, 64, 128; none otherwise.
  static constexpr Swizzle swizzle_of_bytes(int bytes) {
    return bytes == 32 ? Swizzle::b32 : bytes == 64 ? Swizzle::b64 : bytes == 128 ? Swizzle::b128 : Swizzle::none;
  }

  /// An empty descriptor (rank 0): describes nothing, has no map. Exists so the
  /// type can be default-constructed in containers and parameter blocks.
  TensorDescriptor() = default;

  /// Describe `shape` elements of `dtype` at `base` on `device`, with element
  /// strides `strides` and blocks of `block_shape` elements; all three listed
  /// outermost first and of the same rank.
  ///
  /// Throws InvalidArgument, naming the value and the rule, unless:
  ///  - rank (shape.size()) is 1..5, and strides and block_shape have that rank;
  ///  - dtype is an element type TMA can copy: i8, i16, i32, i64, u8, u16, u32,
  ///    u64, f16, bf16, f32, f64, f8e4nv, f8e5, f8e4b15 (fp8 is copied as u8;
  ///    i1 is not supported);
  ///  - base is non-null and 16-byte aligned;
  ///  - every shape dim is 1..2^32;
  ///  - the last stride is 1 (the innermost dim is contiguous);
  ///  - every other stride is >= 1, and stride x element size is a multiple of
  ///    16 bytes and below 2^40 bytes;
  ///  - every block dim is 1..256;
  ///  - block_shape[-1] x element size is >= 16 bytes and a multiple of 16 bytes;
  ///  - with a swizzle, block_shape[-1] x element size is <= the swizzle span
  ///    (32, 64 or 128 bytes);
  ///  - OobFill::nan is used with a float type TMA knows (f16, bf16, f32, f64);
  ///  - the option enums hold one of their listed values.
  /// Then, on a device with TMA, encodes the map through the dlopen'ed driver
  /// (dims reversed to its innermost-first order, strides turned into bytes,
  /// no interleave, element strides 1): a failure there is a DriverError whose
  /// call() is "cuTensorMapEncodeTiled".
  TensorDescriptor(const Device& device, void* base, DType dtype, const std::vector<std::int64_t>& shape,
                   const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& block_shape,
                   Options options);
  /// The same with default Options (no swizzle, zero fill, 128-byte L2 promotion).
  TensorDescriptor(const Device& device, void* base, DType dtype, const std::vector<std::int64_t>& shape,
                   const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& block_shape);

  Backend backend() const noexcept { return backend_; }
  int device_ordinal() const noexcept { return ordinal_; }
  void* base() const noexcept { return base_; }
  DType dtype() const noexcept { return dtype_; }
  int element_size() const noexcept { return size_bytes(dtype_); }  ///< bytes
  int rank() const noexcept { return rank_; }
  std::span<const std::int64_t> shape() const noexcept { return {shape_, std::size_t(rank_)}; }        ///< elements, outermost first
  std::span<const std::int64_t> strides() const noexcept { return {strides_, std::size_t(rank_)}; }    ///< elements, outermost first
  std::span<const std::int64_t> block_shape() const noexcept { return {block_, std::size_t(rank_)}; }  ///< elements, outermost first
  /// Elements in one block (product of block_shape); 0 for an empty descriptor.
  std::int64_t block_numel() const noexcept;
  /// Bytes one block occupies in shared memory: the transaction count a TMA
  /// load of one block completes on its mbarrier (OOB elements are filled, so
  /// always the full block).
  std::int64_t block_bytes() const noexcept { return block_numel() * element_size(); }
  Swizzle swizzle() const noexcept { return swizzle_; }
  OobFill oob_fill() const noexcept { return oob_fill_; }
  L2Promotion l2_promotion() const noexcept { return l2_promotion_; }

  /// True when tensor_map() holds an encoded CUtensorMap (CUDA, sm_90+).
  bool has_tensor_map() const noexcept { return has_map_; }
  /// The raw 128-byte map; all zero when !has_tensor_map().
  const TensorMap& tensor_map() const noexcept { return map_; }

  /// The cuTensorMapEncodeTiled arguments this descriptor stands for (driver
  /// order: innermost dim first, strides in bytes). Computed from the metadata,
  /// so also available where there is no map; used to encode it.
  TmaEncodeArgs tma_args() const noexcept;

 private:
  TensorMap map_{};
  void* base_ = nullptr;
  std::int64_t shape_[max_rank] = {};
  std::int64_t strides_[max_rank] = {};
  std::int64_t block_[max_rank] = {};
  DType dtype_ = DType::f32;
  std::uint8_t rank_ = 0;
  Swizzle swizzle_ = Swizzle::none;
  OobFill oob_fill_ = OobFill::zero;
  L2Promotion l2_promotion_ = L2Promotion::b128;
  bool has_map_ = false;
  Backend backend_ = Backend::interpreter;
  std::int32_t ordinal_ = 0;

  friend struct TensorDescriptorLayout;
};

/// "TensorDescriptor(bf16, shape [4096, 4096], strides [4096, 1], block [128, 64],
/// swizzle 128B, oob zero, tma)" — for logs and error messages.
std::string to_string(const TensorDescriptor& d);

}  // namespace tilejit::runtime

namespace tilejit {
using runtime::TensorDescriptor;
using runtime::TensorMap;
}  // namespace tilejit
