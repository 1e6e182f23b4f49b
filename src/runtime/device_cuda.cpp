// src/runtime/device_cuda.cpp — the CUDA backend of Device (driver API).
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "cuda_driver.hpp"
#include "device_impl.hpp"

namespace tilejit::runtime::detail {
namespace {

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }
CUstream stream(Stream s) { return static_cast<CUstream>(s.handle); }

// One per ordinal for the life of the process: the primary context stays
// retained, so allocations and modules outlive every Device copy.
struct CudaImpl final : Device::Impl {
  const CudaDriver& d;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;

  CudaImpl(const CudaDriver& drv, int ord) : d(drv) {
    backend = Backend::cuda;
    ordinal = ord;
    d.call("cuDeviceGet", d.device_get, &dev, ord);
    char buf[256] = {};
    d.call("cuDeviceGetName", d.device_get_name, buf, int(sizeof buf), dev);
    name = buf;
    const int major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    const int minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    compute_capability = major * 10 + minor;
    // Hopper's wgmma/setmaxnreg need the arch-specific target.
    arch = compute_capability == 90 ? "sm_90a" : fmt::format("sm_{}", compute_capability);
    warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    num_sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    max_shared_bytes_per_block = std::size_t(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    int v = 0;
    d.call("cuDriverGetVersion", d.driver_get_version, &v);
    driver_version = fmt::format("cuda {}.{}", v / 1000, v % 1000 / 10);
    d.call("cuDevicePrimaryCtxRetain", d.primary_ctx_retain, &ctx, dev);
  }

  int attribute(CUdevice_attribute a) const {
    int v = 0;
    d.call("cuDeviceGetAttribute", d.device_get_attribute, &v, a, dev);
    return v;
  }

  // Makes this device's primary context current on the calling thread. The
  // thread_local remembers the last one set, so the common case is free.
  void bind() const {
    thread_local CUcontext current = nullptr;
    if (current != ctx) {
      d.call("cuCtxSetCurrent", d.ctx_set_current, ctx);
      current = ctx;
    }
  }

  void* alloc(std::size_t bytes) override {
    bind();
    CUdeviceptr p = 0;
    d.call("cuMemAlloc", d.mem_alloc, &p, bytes);
    return reinterpret_cast<void*>(p);
  }
  void free(void* p) override {
    bind();
    d.call("cuMemFree", d.mem_free, dptr(p));
  }
  void copy_to_device(void* dst, const void* src, std::size_t n) override {
    bind();
    d.call("cuMemcpyHtoD", d.memcpy_htod, dptr(dst), src, n);
  }
  void copy_to_host(void* dst, const void* src, std::size_t n) override {
    bind();
    d.call("cuMemcpyDtoH", d.memcpy_dtoh, dst, dptr(src), n);
  }
  void copy_device_to_device(void* dst, const void* src, std::size_t n, Stream s) override {
    bind();
    d.call("cuMemcpyDtoDAsync", d.memcpy_dtod_async, dptr(dst), dptr(src), n, stream(s));
  }
  void memset(void* p, int byte, std::size_t n) override {
    bind();
    d.call("cuMemsetD8", d.memset_d8, dptr(p), static_cast<unsigned char>(byte), n);
  }
  void synchronize() override {
    bind();
    d.call("cuCtxSynchronize", d.ctx_synchronize);
  }
  Stream create_stream() override {
    bind();
    CUstream s = nullptr;
    d.call("cuStreamCreate", d.stream_create, &s, unsigned(CU_STREAM_DEFAULT));  // ordered with the default stream
    return {s};
  }
  void destroy_stream(Stream s) override {
    bind();
    d.call("cuStreamDestroy", d.stream_destroy, stream(s));
  }
  void* event_create() override {
    bind();
    CUevent e = nullptr;
    d.call("cuEventCreate", d.event_create, &e, unsigned(CU_EVENT_DEFAULT));
    return e;
  }
  void event_destroy(void* e) override {
    bind();
    d.call("cuEventDestroy", d.event_destroy, static_cast<CUevent>(e));
  }
  void event_record(void* e, Stream s) override {
    bind();
    d.call("cuEventRecord", d.event_record, static_cast<CUevent>(e), stream(s));
  }
  float event_elapsed_ms(void* a, void* b) override {
    bind();
    d.call("cuEventSynchronize", d.event_synchronize, static_cast<CUevent>(b));
    float ms = 0;
    d.call("cuEventElapsedTime", d.event_elapsed_time, &ms, static_cast<CUevent>(a), static_cast<CUevent>(b));
    return ms;
  }
  Function load(const Binary& bin, const std::string& kernel) override {
    if (bin.format != "cubin" && bin.format != "ptx")
      throw InvalidArgument(fmt::format("a CUDA device cannot load a '{}' binary (kernel {})", bin.format, kernel));
    std::vector<std::uint8_t> ptx;  // PTX must be NUL-terminated
    const void* image = bin.bytes.data();
    if (bin.format == "ptx" && bin.bytes.back() != 0) {
      ptx = bin.bytes;
      ptx.push_back(0);
      image = ptx.data();
    }
    bind();
    CUmodule m = nullptr;
    d.call("cuModuleLoadData", d.module_load_data, &m, image);
    CUfunction f = nullptr;
    d.call("cuModuleGetFunction", d.module_get_function, &f, m, kernel.c_str());
    return {f, m};
  }
  void set_max_dynamic_shared(Function f, unsigned bytes) override {
    if (bytes <= 48 * 1024) return;  // the default limit already allows it
    bind();
    d.call("cuFuncSetAttribute", d.func_set_attribute, static_cast<CUfunction>(f.handle),
           CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes));
  }
  void launch(Function f, const LaunchDims& g, Stream s, void** args) override {
    bind();
    d.call("cuLaunchKernel", d.launch_kernel, static_cast<CUfunction>(f.handle), g.grid[0], g.grid[1], g.grid[2],
           g.block[0], g.block[1], g.block[2], g.shared_bytes, stream(s), args, nullptr);
  }
};

}  // namespace

std::shared_ptr<Device::Impl> make_cuda_device(int ordinal) {
  std::string why;
  const CudaDriver* d = cuda_driver(&why);
  if (!d) throw DeviceUnavailable("no CUDA device: " + why);
  static std::mutex mu;
  static std::map<int, std::shared_ptr<Device::Impl>> devices;
  std::lock_guard lock(mu);
  if (auto it = devices.find(ordinal); it != devices.end()) return it->second;
  int count = 0;
  try {
    d->call("cuDeviceGetCount", d->device_get_count, &count);
    if (ordinal < 0 || ordinal >= count)
      throw DeviceUnavailable(fmt::format("no CUDA device {}: {} device(s) present", ordinal, count));
    return devices[ordinal] = std::make_shared<CudaImpl>(*d, ordinal);
  } catch (const DriverError& e) {
    throw DeviceUnavailable(fmt::format("CUDA device {} is not usable: {}", ordinal, e.what()));
  }
}

}  // namespace tilejit::runtime::detail
