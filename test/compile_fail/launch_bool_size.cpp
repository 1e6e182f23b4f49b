// Must NOT compile: `true` passed for a Size (i32) kernel parameter.
#include <tilejit/tilejit.hpp>
namespace tj = tilejit;
struct K {
  void operator()(tj::Ptr<float> x, tj::Size n) const {
    auto i = tj::arange<128>();
    tj::store(x + i, tj::zeros<float, 128>(), i < n);
  }
};
int main() {
  float buf[128];
  tj::compile<K>(tj::Device::interpreter()).launch(tj::Grid{1}, buf, true);
}
