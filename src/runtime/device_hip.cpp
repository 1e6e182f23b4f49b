// src/runtime/device_hip.cpp — the HIP backend of Device (module API).
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "device_impl.hpp"
#include "hip_driver.hpp"

namespace tilejit::runtime::detail {
namespace {

hipStream_t stream(Stream s) { return static_cast<hipStream_t>(s.handle); }

// One per ordinal for the life of the process, like the CUDA backend.
struct HipImpl final : Device::Impl {
  const HipDriver& d;

  HipImpl(const HipDriver& drv, int ord) : d(drv) {
    backend = Backend::hip;
    ordinal = ord;
    // Room for a longer struct than this header's, should the library fill one.
    union {
      hipDeviceProp_t p;
      char pad[sizeof(hipDeviceProp_t) + 4096];
    } u{};
    d.call("hipGetDeviceProperties", d.get_device_properties, &u.p, ord);
    const hipDeviceProp_t& p = u.p;
    name.assign(p.name, strnlen(p.name, sizeof p.name));
    std::string gcn(p.gcnArchName, strnlen(p.gcnArchName, sizeof p.gcnArchName));
    arch = gcn.substr(0, gcn.find(':'));  // "gfx90a:sramecc+:xnack-" -> "gfx90a"
    warp_size = p.warpSize;
    num_sms = p.multiProcessorCount;
    max_shared_bytes_per_block = p.sharedMemPerBlock;
    int v = 0;
    d.call("hipRuntimeGetVersion", d.runtime_get_version, &v);
    driver_version = fmt::format("hip {}.{}.{}", v / 10000000, v / 100000 % 100, v % 100000);
  }

  // HIP keeps a current device per thread; set ours when it is not the last one set.
  void bind() const {
    thread_local int current = -1;
    if (current != ordinal) {
      d.call("hipSetDevice", d.set_device, ordinal);
      current = ordinal;
    }
  }

  void* alloc(std::size_t bytes) override {
    bind();
    void* p = nullptr;
    d.call("hipMalloc", d.mem_alloc, &p, bytes);
    return p;
  }
  void free(void* p) override {
    bind();
    d.call("hipFree", d.mem_free, p);
  }
  void copy_to_device(void* dst, const void* src, std::size_t n) override {
    bind();
    d.call("hipMemcpy", d.mem_copy, dst, src, n, hipMemcpyHostToDevice);
  }
  void copy_to_host(void* dst, const void* src, std::size_t n) override {
    bind();
    d.call("hipMemcpy", d.mem_copy, dst, src, n, hipMemcpyDeviceToHost);
  }
  void copy_device_to_device(void* dst, const void* src, std::size_t n, Stream s) override {
    bind();
    d.call("hipMemcpyAsync", d.mem_copy_async, dst, src, n, hipMemcpyDeviceToDevice, stream(s));
  }
  void memset(void* p, int byte, std::size_t n) override {
    bind();
    d.call("hipMemset", d.mem_set, p, byte, n);
  }
  void synchronize() override {
    bind();
    d.call("hipDeviceSynchronize", d.device_synchronize);
  }
  Stream create_stream() override {
    bind();
    hipStream_t s = nullptr;
    d.call("hipStreamCreate", d.stream_create, &s);
    return {s};
  }
  void destroy_stream(Stream s) override {
    bind();
    d.call("hipStreamDestroy", d.stream_destroy, stream(s));
  }
  void* event_create() override {
    bind();
    hipEvent_t e = nullptr;
    d.call("hipEventCreate", d.event_create, &e);
    return e;
  }
  void event_destroy(void* e) override {
    bind();
    d.call("hipEventDestroy", d.event_destroy, static_cast<hipEvent_t>(e));
  }
  void event_record(void* e, Stream s) override {
    bind();
    d.call("hipEventRecord", d.event_record, static_cast<hipEvent_t>(e), stream(s));
  }
  float event_elapsed_ms(void* a, void* b) override {
    bind();
    d.call("hipEventSynchronize", d.event_synchronize, static_cast<hipEvent_t>(b));
    float ms = 0;
    d.call("hipEventElapsedTime", d.event_elapsed_time, &ms, static_cast<hipEvent_t>(a), static_cast<hipEvent_t>(b));
    return ms;
  }
  Function load(const Binary& bin, const std::string& kernel) override {
    if (bin.format != "hsaco")
      throw InvalidArgument(fmt::format("a HIP device cannot load a '{}' binary (kernel {})", bin.format, kernel));
    bind();
    hipModule_t m = nullptr;
    d.call("hipModuleLoadData", d.module_load_data, &m, bin.bytes.data());
    hipFunction_t f = nullptr;
    d.call("hipModuleGetFunction", d.module_get_function, &f, m, kernel.c_str());
    return {f, m};
  }
  void set_max_dynamic_shared(Function, unsigned) override {}  // AMD has no opt-in limit to raise
  void launch(Function f, const LaunchDims& g, Stream s, void** args) override {
    bind();
    d.call("hipModuleLaunchKernel", d.module_launch_kernel, static_cast<hipFunction_t>(f.handle), g.grid[0],
           g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2], g.shared_bytes, stream(s), args, nullptr);
  }
};

}  // namespace

std::shared_ptr<Device::Impl> make_hip_device(int ordinal) {
  std::string why;
  const HipDriver* d = hip_driver(&why);
  if (!d) throw DeviceUnavailable("no HIP device: " + why);
  static std::mutex mu;
  static std::map<int, std::shared_ptr<Device::Impl>> devices;
  std::lock_guard lock(mu);
  if (auto it = devices.find(ordinal); it != devices.end()) return it->second;
  int count = 0;
  try {
    d->call("hipGetDeviceCount", d->get_device_count, &count);
    if (ordinal < 0 || ordinal >= count)
      throw DeviceUnavailable(fmt::format("no HIP device {}: {} device(s) present", ordinal, count));
    return devices[ordinal] = std::make_shared<HipImpl>(*d, ordinal);
  } catch (const DriverError& e) {
    throw DeviceUnavailable(fmt::format("HIP device {} is not usable: {}", ordinal, e.what()));
  }
}

}  // namespace tilejit::runtime::detail
