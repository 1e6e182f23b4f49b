#include "tilejit/lang/events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "tilejit/core/error.hpp"

namespace tilejit::lang {

void check_event_id(long long id) {
  if (id < INT32_MIN || id > INT32_MAX)
    throw InvalidArgument(fmt::format("async event id {}: an id is an i32 (in [{}, {}])", id, INT32_MIN, INT32_MAX));
}

void record_event(std::string_view name, int id_node, int kind) {
  ir::Kernel* k = current_kernel();
  if (k == nullptr) throw Error(fmt::format("async event '{}': tile operations can only run while a kernel is traced (inside tilejit::trace / compile)", name));
  if (name.empty() || name.size() > 64)
    throw InvalidArgument(fmt::format("async event name '{}' ({} characters): a site's name has 1 to 64 characters", name, name.size()));
  const auto bad = std::find_if(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (bad != name.end())
    throw InvalidArgument(fmt::format("async event name with a control character (code {}) at position {}: not allowed",
                                      static_cast<int>(static_cast<unsigned char>(*bad)), bad - name.begin()));
  if (ir::is_reserved_event_site(name))
    throw InvalidArgument(fmt::format("async event name '{}': reserved for the events the code generator records "
                                      "(\"{}\", \"{}\", \"{}...\")", name, ir::kProgramSite, ir::kWgmmaSite, ir::kTmaSitePrefix));
  auto& sites = k->event_sites;
  auto it = std::find(sites.begin(), sites.end(), name);
  if (it == sites.end()) {
    if (sites.size() >= 4096) throw InvalidArgument(fmt::format("async event '{}': a kernel has at most 4096 event sites", name));
    it = sites.insert(sites.end(), std::string(name));
  }
  ir::Node n;
  n.op = ir::Op::event;
  n.type = type_of<std::int32_t>();
  n.args[0] = id_node;
  n.i = it - sites.begin();
  n.axis = kind;
  record(n);
}

}  // namespace tilejit::lang
