// What every fuzz target shares: FUZZ_CHECK, which turns a broken invariant into a crash that
// libFuzzer records (a parser that returns wrong data is as much a finding as one that crashes),
// the input as a std::string or JSON, and the frame of the JSON file fuzzers (jsonRoundTrip).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "model/core/error.h"

#define FUZZ_CHECK(condition, what)                                                                                           \
  do {                                                                                                                        \
    if (!(condition)) {                                                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s (%s)\n", __FILE__, __LINE__, #condition, std::string(what).c_str()); \
      std::abort();                                                                                                           \
    }                                                                                                                         \
  } while (0)

namespace tscope::fuzz {

inline std::string asString(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// The input as JSON into `out`; false when it is not JSON (loadModel and the other readers refuse
// that as "malformed JSON", numbers like 1e400 included: nothing more to check).
inline bool parseJson(const uint8_t* data, size_t size, nlohmann::json& out) {
  try {
    out = nlohmann::json::parse(asString(data, size));
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

// The frame of a fuzzer for one of tscope's JSON files: the input parsed as JSON, then by fromJson
// (a tscope::Error is a refusal: fine). An accepted value must pass `check`, and write back with
// toJson to JSON that fromJson accepts and that writes the same text again (`what` names the file
// kind in the findings).
template <typename FromJson, typename ToJson, typename Check>
void jsonRoundTrip(const uint8_t* data, size_t size, const std::string& what, FromJson fromJson, ToJson toJson, Check check) {
  nlohmann::json json;
  if (!parseJson(data, size, json)) return;
  decltype(fromJson(json)) value;
  try {
    value = fromJson(json);
  } catch (const Error&) {
    return;
  }
  check(value);
  const std::string written = toJson(value).dump();
  decltype(fromJson(json)) reread;
  try {
    reread = fromJson(nlohmann::json::parse(written));
  } catch (const Error& e) {
    FUZZ_CHECK(false, "the " + what + " written back is refused: " + e.what());
  }
  FUZZ_CHECK(toJson(reread).dump() == written, "the " + what + " changed on a round trip");
}

}  // namespace tscope::fuzz
