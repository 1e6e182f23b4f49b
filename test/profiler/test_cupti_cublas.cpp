// Real CUPTI attribution of a kernel tilejit did not write: cuBLAS's GEMM lands under the scope that called it,
// beside a tilejit kernel in another scope. cuBLAS is dlopen'ed (present wherever the CUDA toolkit is), so the test
// binary links nothing more; without a GPU or without cuBLAS the case skips with a message.
#include <dlfcn.h>

#include <cmath>
#include <string>
#include <vector>

#include "examples/vector_add.hpp"
#include "profiler_test_util.hpp"
#include "tilejit/tilejit.hpp"

using namespace prof_test;
namespace tp = tilejit::profiler;
namespace tj = tilejit;

namespace {

/// The three cuBLAS entry points the test calls (cublas_api.h's v2 signatures; status 0 = CUBLAS_STATUS_SUCCESS).
struct Cublas {
  using Create = int (*)(void** handle);
  using Destroy = int (*)(void* handle);
  using Sgemm = int (*)(void* handle, int transa, int transb, int m, int n, int k, const float* alpha, const float* a, int lda,
                        const float* b, int ldb, const float* beta, float* c, int ldc);
  void* lib = nullptr;
  Create create = nullptr;
  Destroy destroy = nullptr;
  Sgemm sgemm = nullptr;
  Cublas() {
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so"}) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
    }
    if (!lib) return;
    create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<Destroy>(dlsym(lib, "cublasDestroy_v2"));
    sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cublasSgemm_v2"));
  }
  bool ok() const { return create && destroy && sgemm; }
};

}  // namespace

TEST_CASE("profiler cupti gpu: a cuBLAS GEMM is attributed to the scope that called it") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping (", tj::Device::cuda_unavailable_reason(), ")");
    return;
  }
  const Cublas blas;
  if (!blas.ok()) {
    MESSAGE("cuBLAS not found (", dlerror(), "): skipping");
    return;
  }
  const int n = 512;
  const std::size_t bytes = std::size_t(n) * n * sizeof(float);
  std::vector<float> a(std::size_t(n) * n), b(std::size_t(n) * n), c(std::size_t(n) * n, std::nanf(""));
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>((i * 7919) % 13) / 13.f - 0.5f;
    b[i] = static_cast<float>((i * 104729) % 11) / 11.f - 0.5f;
  }
  auto* da = static_cast<float*>(dev.alloc(bytes));
  auto* db = static_cast<float*>(dev.alloc(bytes));
  auto* dc = static_cast<float*>(dev.alloc(bytes));
  dev.copy_to_device(da, a.data(), bytes);
  dev.copy_to_device(db, b.data(), bytes);
  dev.copy_to_device(dc, c.data(), bytes);
  void* handle = nullptr;
  REQUIRE(blas.create(&handle) == 0);
  auto k = tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 1});
  k.launch(tj::Grid{1}, da, db, dc, 1);  // module loaded before the session
  dev.synchronize();

  auto dir = temp_dir("cupti_cublas");
  auto s = tp::start((dir / "blas").string(), {.backend = "cupti", .hook = "launch"});
  REQUIRE_MESSAGE(tp::stats(s).kernel_records, "the cupti backend did not start (see the message above)");
  const float one = 1.f, zero = 0.f;
  {
    tp::Scope g("cublas_gemm");
    for (int i = 0; i < 3; ++i) REQUIRE(blas.sgemm(handle, 0, 0, n, n, n, &one, da, n, db, n, &zero, dc, n) == 0);
  }
  {
    tp::Scope t("tilejit_add");
    k.launch(tj::Grid{tj::cdiv(n, 96)}, da, db, da, n);  // a's first n elements += b's: after the GEMMs
  }
  dev.synchronize();
  auto rep = tp::finalize(s);
  dev.copy_to_host(c.data(), dc, bytes);
  REQUIRE(blas.destroy(handle) == 0);
  dev.free(da), dev.free(db), dev.free(dc);

  // cuBLAS is column-major: C = A·B with A, B, C column-major n x n.
  for (int col : {0, 17, n - 1})
    for (int row : {0, 200, n - 1}) {
      double want = 0;
      for (int i = 0; i < n; ++i) want += double(a[std::size_t(i) * n + row]) * b[std::size_t(col) * n + i];
      CHECK(c[std::size_t(col) * n + row] == doctest::Approx(want).epsilon(1e-3));
    }

  REQUIRE(rep.files.size() == 1);
  const json j = read_json(rep.files[0]);
  MESSAGE("profile: " << j.dump());
  const json& root = j[0];
  const json& gemm = at(root, {"cublas_gemm"});
  REQUIRE(!gemm["children"].empty());
  long long launches = 0, ns = 0;
  for (const auto& kn : gemm["children"]) {
    const std::string name = kn["frame"]["name"];
    CHECK(name.find("VecAdd") == std::string::npos);  // cuBLAS's own kernel(s), not tilejit's
    CHECK(kn["metrics"]["device_type"] == "CUDA");
    launches += kn["metrics"]["count"].get<long long>();
    ns += kn["metrics"]["time (ns)"].get<long long>();
  }
  CHECK(launches >= 3);  // one GEMM kernel per call at least (a split-K GEMM adds a reduction)
  CHECK(ns > 0);
  const json& add = at(root, {"tilejit_add"});
  REQUIRE(add["children"].size() == 1);
  CHECK(add["children"][0]["frame"]["name"].get<std::string>().find("VecAdd") != std::string::npos);
  CHECK(add["children"][0]["metrics"]["count"] == 1);
}
