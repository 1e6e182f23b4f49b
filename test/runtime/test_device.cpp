// Tests of tilejit/runtime/device.hpp on a machine that may have no GPU.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/runtime/launch_check.hpp"
#include "tilejit/runtime/device.hpp"

namespace rt = tilejit::runtime;
using tilejit::DeviceUnavailable;
using tilejit::InvalidArgument;
using tilejit::Unsupported;

namespace {

// Sets an environment variable for one scope, restoring the old value after.
struct ScopedEnv {
  std::string name;
  bool had = false;
  std::string old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) had = true, old = v;
    if (value) ::setenv(n, value, 1);
    else ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (had) ::setenv(name.c_str(), old.c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

rt::LaunchDims dims(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
  rt::LaunchDims d;
  d.grid[0] = gx, d.grid[1] = gy, d.grid[2] = gz;
  d.block[0] = bx, d.block[1] = by, d.block[2] = bz;
  return d;
}

}  // namespace

TEST_CASE("device: best() is the interpreter without a GPU or with TILEJIT_INTERPRET=1") {
  {
    ScopedEnv env("TILEJIT_INTERPRET", "1");
    CHECK(rt::Device::best().backend() == rt::Backend::interpreter);
  }
  ScopedEnv env("TILEJIT_INTERPRET", nullptr);
  if (rt::Device::cuda_unavailable_reason().empty()) {
    MESSAGE("a CUDA GPU is present: best() is " << rt::to_string(rt::Device::best().backend()));
    return;
  }
  const rt::Device d = rt::Device::best();
  if (d.backend() == rt::Backend::hip) {
    MESSAGE("an AMD GPU is present: best() is HIP");
    return;
  }
  CHECK(d.backend() == rt::Backend::interpreter);
  CHECK(d == rt::Device::interpreter());
}

TEST_CASE("device: cuda() and hip() throw DeviceUnavailable with a reason when there is no GPU") {
  const std::string reason = rt::Device::cuda_unavailable_reason();
  if (reason.empty()) {
    MESSAGE("a CUDA GPU is present (" << rt::Device::cuda().name() << "), skipping");
  } else {
    MESSAGE("CUDA unavailable: " << reason);
    try {
      rt::Device::cuda();
      FAIL("Device::cuda() succeeded although cuda_unavailable_reason() is set");
    } catch (const DeviceUnavailable& e) {
      CHECK(std::string(e.what()).size() > 10);
    }
  }
  try {
    const auto d = rt::Device::hip();
    MESSAGE("an AMD GPU is present: " << d.name() << " " << d.arch());
  } catch (const DeviceUnavailable& e) {
    MESSAGE("HIP unavailable: " << std::string(e.what()));
    CHECK(std::string(e.what()).size() > 10);
  }
  CHECK_THROWS_AS(rt::Device::cuda(1 << 20), DeviceUnavailable);
}

TEST_CASE("device: interpreter properties") {
  const rt::Device d = rt::Device::interpreter();
  CHECK(d.backend() == rt::Backend::interpreter);
  CHECK(rt::to_string(d.backend()) == "interpreter");
  CHECK(d.name() == "CPU interpreter");
  CHECK(d.arch().empty());
  CHECK(d.compute_capability() == 0);
  CHECK(d.warp_size() == 32);
  CHECK(d.num_sms() >= 1);
  CHECK(d.max_shared_bytes_per_block() > 0);
  CHECK_FALSE(d.driver_version().empty());
}

TEST_CASE("device: interpreter alloc, memset and copies round trip") {
  const rt::Device d = rt::Device::interpreter();
  const std::size_t n = 1000;
  void* a = d.alloc(n);
  void* b = d.alloc(n);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);

  std::vector<std::uint8_t> host(n);
  d.memset(a, 0xAB, n);
  d.copy_to_host(host.data(), a, n);
  CHECK(host == std::vector<std::uint8_t>(n, 0xAB));

  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<std::uint8_t>(i * 7);
  d.copy_to_device(a, host.data(), n);
  d.copy_device_to_device(b, a, n);
  d.synchronize();
  std::vector<std::uint8_t> back(n);
  d.copy_to_host(back.data(), b, n);
  CHECK(back == host);

  CHECK(d.alloc(0) == nullptr);
  d.free(nullptr);
  d.copy_to_host(nullptr, nullptr, 0);  // zero bytes: nothing to check or do
  CHECK_THROWS_AS(d.copy_to_host(back.data(), nullptr, 4), InvalidArgument);
  CHECK_THROWS_AS(d.copy_to_device(nullptr, host.data(), 4), InvalidArgument);
  CHECK_THROWS_AS(d.memset(a, 256, 4), InvalidArgument);
  // Freeing what alloc did not return (host memory, an interior pointer) or freeing twice is a typed error, not
  // glibc's abort; the allocation stays usable.
  CHECK_THROWS_WITH_AS(d.free(host.data()), doctest::Contains("not a live allocation of the CPU interpreter"), InvalidArgument);
  CHECK_THROWS_AS(d.free(static_cast<char*>(a) + 64), InvalidArgument);
  // Copies and memsets that run past the end of an allocation are typed errors naming it, before any byte moves
  // (they overwrote the host heap: glibc aborted later).
  std::vector<std::uint8_t> big(4 * n, 0x5A);
  CHECK_THROWS_WITH_AS(d.memset(a, 0x11, n + 1), doctest::Contains("memset destination: 1001 bytes at byte offset 0 of an interpreter "
                                                                    "allocation of 1000 bytes"), InvalidArgument);
  CHECK_THROWS_WITH_AS(d.copy_to_device(static_cast<char*>(a) + 600, big.data(), 401), doctest::Contains("run 1 bytes past its end"),
                       InvalidArgument);
  CHECK_THROWS_AS(d.copy_to_host(big.data(), a, 4 * n), InvalidArgument);
  CHECK_THROWS_AS(d.copy_device_to_device(b, a, n + 8), InvalidArgument);
  CHECK_THROWS_AS(d.copy_device_to_device(static_cast<char*>(b) + 8, a, n), InvalidArgument);
  d.copy_to_device(static_cast<char*>(a) + 600, big.data(), 0);  // nothing, at any offset
  d.copy_to_host(back.data(), a, n);
  CHECK(back == host);  // nothing was written by the refused calls
  d.free(a);
  CHECK_THROWS_WITH_AS(d.free(a), doctest::Contains("freed twice"), InvalidArgument);
  d.free(b);
}

TEST_CASE("device: interpreter streams, events and time_copies use the host clock") {
  const rt::Device d = rt::Device::interpreter();
  rt::Stream s = d.create_stream();
  d.destroy_stream(s);
  std::vector<char> x(1 << 20, 1), y(1 << 20);
  float ms = d.time_copies(y.data(), x.data(), x.size(), 4);
  CHECK(ms >= 0);
  CHECK(y == x);
  float t = d.time_ms({}, [] {});
  CHECK(t >= 0);
  CHECK_THROWS_AS(d.time_copies(y.data(), x.data(), x.size(), 0), InvalidArgument);
}

TEST_CASE("device: launch validation rejects zero dimensions and oversized blocks") {
  using rt::detail::validate_launch;
  CHECK_NOTHROW(validate_launch(dims(1, 1, 1, 1, 1, 1)));
  CHECK_NOTHROW(validate_launch(dims(65536, 2, 3, 1024, 1, 1)));
  CHECK_NOTHROW(validate_launch(dims(1, 1, 1, 32, 8, 4)));
  try {
    validate_launch(dims(4, 0, 1, 128, 1, 1));
    FAIL("zero grid.y accepted");
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("grid.y") != std::string::npos);
  }
  CHECK_THROWS_AS(validate_launch(dims(0, 1, 1, 128, 1, 1)), InvalidArgument);
  CHECK_THROWS_AS(validate_launch(dims(1, 1, 0, 128, 1, 1)), InvalidArgument);
  CHECK_THROWS_AS(validate_launch(dims(1, 1, 1, 0, 1, 1)), InvalidArgument);
  CHECK_THROWS_AS(validate_launch(dims(1, 1, 1, 32, 33, 1)), InvalidArgument);
  CHECK_THROWS_AS(validate_launch(dims(1, 1, 1, 65536, 65536, 2)), InvalidArgument);  // no overflow

  // Through a Device: the interpreter validates, then refuses machine code.
  const rt::Device interp = rt::Device::interpreter();
  CHECK_THROWS_AS(interp.launch({}, dims(0, 1, 1, 32, 1, 1), {}, nullptr), InvalidArgument);
  CHECK_THROWS_AS(interp.launch({}, dims(1, 1, 1, 32, 1, 1), {}, nullptr), Unsupported);
  CHECK_THROWS_AS(interp.load(rt::Binary{{0x7f, 'E', 'L', 'F'}, "cubin"}, "k"), Unsupported);
  if (rt::Device::cuda_unavailable_reason().empty()) {
    const rt::Device gpu = rt::Device::cuda();
    CHECK_THROWS_AS(gpu.launch({}, dims(1, 0, 1, 32, 1, 1), {}, nullptr), InvalidArgument);
  }
}

TEST_CASE("device: CUDA GPU compiles, loads, launches and times a kernel") {
  if (const std::string why = rt::Device::cuda_unavailable_reason(); !why.empty()) {
    MESSAGE("no CUDA GPU, skipping: " << why);
    return;
  }
  const rt::Device gpu = rt::Device::cuda();
  MESSAGE(gpu.name() << ", " << gpu.arch() << ", " << gpu.num_sms() << " SMs, " << gpu.driver_version()
                     << ", max shared " << gpu.max_shared_bytes_per_block());
  CHECK(gpu.backend() == rt::Backend::cuda);
  CHECK(gpu == rt::Device::cuda());
  CHECK(gpu.warp_size() == 32);
  CHECK(gpu.compute_capability() >= 50);
  CHECK(gpu.arch() == (gpu.compute_capability() == 90 ? "sm_90a" : "sm_" + std::to_string(gpu.compute_capability())));

  const char* src = R"(extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  extern __shared__ float scratch[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  scratch[threadIdx.x] = a * x[i < n ? i : 0];
  __syncthreads();
  if (i < n) y[i] += scratch[threadIdx.x];
}
)";
  rt::JitResult jr = rt::compile({rt::Compiler::nvrtc, src, "axpy.cu", gpu.arch(), {}});
  rt::Function f = gpu.load(jr.binary, "axpy");
  CHECK(f.handle != nullptr);
  CHECK_THROWS_AS(gpu.load(jr.binary, "no_such_kernel"), tilejit::DriverError);
  CHECK_THROWS_AS(gpu.load(rt::Binary{{1, 2, 3}, "hsaco"}, "axpy"), InvalidArgument);

  const int n = 100000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float(i), y[i] = 1.0f;
  void* dx = gpu.alloc(n * sizeof(float));
  void* dy = gpu.alloc(n * sizeof(float));
  gpu.copy_to_device(dx, x.data(), n * sizeof(float));
  gpu.copy_to_device(dy, y.data(), n * sizeof(float));
  float a = 2.0f;
  int nn = n;
  void* args[] = {&a, &dx, &dy, &nn};
  rt::LaunchDims d = dims((n + 255) / 256, 1, 1, 256, 1, 1);
  d.shared_bytes = 64 * 1024;  // needs the opt-in
  gpu.set_max_dynamic_shared(f, d.shared_bytes);
  rt::Stream s = gpu.create_stream();
  float ms = gpu.time_ms(s, [&] { gpu.launch(f, d, s, args); });
  gpu.synchronize();
  MESSAGE("axpy launch: " << ms << " ms");
  CHECK(ms >= 0);
  std::vector<float> out(n);
  gpu.copy_to_host(out.data(), dy, n * sizeof(float));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += out[i] != 1.0f + 2.0f * float(i);
  CHECK(wrong == 0);
  CHECK_THROWS_AS(gpu.launch(f, dims(1, 0, 1, 32, 1, 1), s, args), InvalidArgument);
  gpu.destroy_stream(s);

  gpu.memset(dy, 0, n * sizeof(float));
  gpu.copy_to_host(out.data(), dy, n * sizeof(float));
  CHECK(out == std::vector<float>(n, 0.0f));

  const std::size_t big = std::size_t(256) << 20;
  void* a0 = gpu.alloc(big);
  void* a1 = gpu.alloc(big);
  float copy_ms = gpu.time_copies(a1, a0, big, 10);
  MESSAGE("device-to-device copy: " << 2.0 * 10 * double(big) / (copy_ms * 1e-3) / 1e12 << " TB/s (read + write)");
  CHECK(copy_ms > 0);
  gpu.free(a0);
  gpu.free(a1);
  gpu.free(dx);
  gpu.free(dy);
}
