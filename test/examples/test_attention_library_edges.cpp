// examples::Attention at its edges. The decode workspace when its allocation fails: the object stays valid (a later call
// allocates afresh, the destructor frees each allocation once). It used to free the old workspace, then
// throw from alloc with ws_ still pointing at the freed block: the next call wrote to freed memory and the
// destructor freed it twice.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include "examples/attention/attention.hpp"
#include "src/runtime/device_impl.hpp"

namespace tj = tilejit;
using examples::AttnShape;

namespace {

/// The interpreter's host memory, with a cap on one allocation (a larger one throws DriverError, as a full
/// GPU would) and a ledger: every free must be of a live allocation.
struct CappedHostDevice : tj::runtime::Device::Impl {
  std::size_t cap;
  std::set<void*> live;
  int bad_frees = 0, failed_allocs = 0;
  explicit CappedHostDevice(std::size_t max_alloc) : cap(max_alloc) {
    backend = tj::runtime::Backend::interpreter;
    name = "capped host";
    driver_version = "interpreter";
  }
  ~CappedHostDevice() override {
    for (void* p : live) std::free(p);
  }
  void* alloc(std::size_t bytes) override {
    if (bytes > cap) {
      ++failed_allocs;
      throw tj::DriverError("capped host: out of memory", "alloc", 2);
    }
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    live.insert(p);
    return p;
  }
  void free(void* p) override {
    if (live.erase(p) == 0) {
      ++bad_frees;  // a double free (or a foreign pointer): never hand it to the allocator
      return;
    }
    std::free(p);
  }
  void copy_to_device(void* d, const void* s, std::size_t n) override { std::memmove(d, s, n); }
  void copy_to_host(void* d, const void* s, std::size_t n) override { std::memmove(d, s, n); }
  void copy_device_to_device(void* d, const void* s, std::size_t n, tj::runtime::Stream) override { std::memmove(d, s, n); }
  void memset(void* p, int b, std::size_t n) override { std::memset(p, b, n); }
  void synchronize() override {}
  tj::runtime::Stream create_stream() override { return {}; }
  void destroy_stream(tj::runtime::Stream) override {}
  void* event_create() override { return nullptr; }
  void event_destroy(void*) override {}
  void event_record(void*, tj::runtime::Stream) override {}
  float event_elapsed_ms(void*, void*) override { return 0; }
  tj::runtime::Function load(const tj::runtime::Binary&, const std::string&) override {
    throw tj::Unsupported("capped host: no modules");
  }
  void set_max_dynamic_shared(tj::runtime::Function, unsigned) override {}
  void launch(tj::runtime::Function, const tj::runtime::LaunchDims&, tj::runtime::Stream, void**) override {
    throw tj::Unsupported("capped host: no launches");
  }
};

}  // namespace

TEST_CASE("attention_decode_workspace_survives_a_failed_allocation") {
  constexpr int D = 64, s_max = 4096;
  auto impl = std::make_shared<CappedHostDevice>(16 * 1024);
  const tj::Device dev(impl);
  std::vector<tj::bf16> q(D, tj::bf16(0.5f)), k(static_cast<std::size_t>(s_max) * D, tj::bf16(0.25f)), v = k;
  std::vector<std::int32_t> lens{64};
  const AttnShape s{.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 1, .head_dim = D};
  std::vector<tj::bf16> o1(D), o3(D);
  std::vector<float> l1(1), l3(1);
  {
    examples::Attention<tj::bf16> attn(dev);
    // 1. a small workspace: one split of one head (66 floats)
    attn.decode(q.data(), k.data(), v.data(), lens.data(), o1.data(), l1.data(), s, 64, 64);
    // 2. 256 splits of 16 keys: a 67 KiB workspace, over the cap: alloc throws
    CHECK_THROWS_AS(attn.decode(q.data(), k.data(), v.data(), lens.data(), o3.data(), l3.data(), s, s_max, 16), tj::DriverError);
    CHECK(impl->failed_allocs == 1);
    // 3. the small one again: a fresh workspace, the same result
    attn.decode(q.data(), k.data(), v.data(), lens.data(), o3.data(), l3.data(), s, 64, 64);
    CHECK(impl->bad_frees == 0);
    for (int d = 0; d < D; ++d) CHECK(static_cast<float>(o3[static_cast<std::size_t>(d)]) == static_cast<float>(o1[static_cast<std::size_t>(d)]));
    CHECK(l3[0] == l1[0]);
  }
  CHECK(impl->bad_frees == 0);  // ~Attention freed each workspace once
  CHECK(impl->live.empty());
}

TEST_CASE("attention_huge_extents_and_non_finite_scale_are_typed_errors") {
  using A = examples::Attention<tj::bf16>;
  const auto dev = tj::Device::interpreter();
  A attn(dev);
  std::vector<tj::bf16> x(64);
  std::vector<float> l(4);
  std::vector<std::int32_t> lens{0, 0};
  constexpr long long huge = 1LL << 61;
  // forward_varlen and decode used to allocate batch + 1 / batch host entries first: a bare std::bad_alloc.
  CHECK_THROWS_WITH_AS(attn.forward_varlen(x.data(), x.data(), x.data(), x.data(), l.data(), lens.data(), 1,
                                           {.batch = huge, .heads_q = 1, .heads_kv = 1, .seqlen = 1, .head_dim = 64}),
                       doctest::Contains("batch = 2305843009213693952: at most 65535"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.decode(x.data(), x.data(), x.data(), lens.data(), x.data(), l.data(),
                                   {.batch = huge, .heads_q = 1, .heads_kv = 1, .seqlen = 1, .head_dim = 64}, 1),
                       doctest::Contains("32-bit offsets"), tj::InvalidArgument);
  // B·H·S·D past 2^63: overflowed (undefined) and could wrap to a count that passes; now checked factor by factor.
  const AttnShape wraps{.batch = 1LL << 32, .heads_q = 1LL << 16, .heads_kv = 1LL << 16, .seqlen = 1LL << 10, .head_dim = 64};
  CHECK_THROWS_WITH_AS(attn.forward(x.data(), x.data(), x.data(), x.data(), l.data(), wraps),
                       doctest::Contains("4294967296 x 65536 x 1024 x 64 elements, more than 2^31 - 1"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::fits_i32({1LL << 62, 4}, "t"), doctest::Contains("more than 2^31 - 1"), tj::InvalidArgument);
  CHECK_NOTHROW(A::fits_i32({1LL << 62, 0}, "t"));
  CHECK_NOTHROW(A::fits_i32({1024, 1024, 2047}, "t"));
  CHECK_THROWS_AS(A::fits_i32({1024, 1024, 2048}, "t"), tj::InvalidArgument);
  // A scale of inf (or -inf) gave NaN everywhere.
  for (double sc : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
    CAPTURE(sc);
    CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = sc}),
                         doctest::Contains("must be > 0 and finite"), tj::InvalidArgument);
  }
  CHECK_NOTHROW(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = 0.125}));
}
