// The three output formats, built with nlohmann::json.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "state.hpp"

namespace tilejit::profiler::detail {

/// Hatchet: [tree, device_info]; threads merged by path; inclusive metrics also
/// as "<name> (inc)".
nlohmann::json hatchet_json(const PhaseData& phase);

/// Chrome trace: {"displayTimeUnit": "us", "traceEvents": [...], "otherData": {...}}.
nlohmann::json chrome_trace_json(const PhaseData& phase, const Session& session);

/// The session's format as JSON (hatchet or chrome trace).
nlohmann::json to_json(const PhaseData& phase, const Session& session);

/// JSON text (never throws on invalid UTF-8: bad bytes become U+FFFD).
std::string dump(const nlohmann::json& j);

/// The bytes of a file in `format`.
std::string encode(const nlohmann::json& j, Format format);

}  // namespace tilejit::profiler::detail
