// Reading one JSON value into a C++ field with nothing lost on the way, shared by every parser of
// JSON files (config.json, the training config, session files). nlohmann's get<int>() truncates 12.7,
// wraps 2^32 + 1 to 1, and casting a double outside int's range is undefined behaviour; 1e400 parses
// to inf, which is then written back as null. jsonFieldProblem refuses all of these.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/core/error.h"

namespace tscope {

// Stores `value` in `out` and returns nullptr when it converts exactly; otherwise leaves `out` alone
// and returns what is wrong ("is not an integer", ...), to follow the field's name in a message.
// Integers must be whole numbers (12 or 12.0) inside T's range, floating-point fields finite numbers
// inside T's range, booleans booleans, strings strings.
template <typename T>
const char* jsonFieldProblem(const nlohmann::json& value, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) return "is not true or false";
    out = value.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned()) {
      if (!std::in_range<T>(value.get<uint64_t>())) return "is out of range";
      out = static_cast<T>(value.get<uint64_t>());
    } else if (value.is_number_integer()) {
      if (!std::in_range<T>(value.get<int64_t>())) return "is out of range";
      out = static_cast<T>(value.get<int64_t>());
    } else if (value.is_number_float()) {
      const double number = value.get<double>();
      if (!std::isfinite(number) || number != std::trunc(number)) return "is not an integer";
      // Exact bounds: [min, max + 1) holds every whole double that fits T.
      const double below = static_cast<double>(std::numeric_limits<T>::min());
      const double above = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
      if (number < below || number >= above) return "is out of range";
      out = static_cast<T>(number);
    } else {
      return "is not an integer";
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number()) return "is not a number";
    const double number = value.get<double>();
    if (!std::isfinite(number) || std::fabs(number) > static_cast<double>(std::numeric_limits<T>::max())) return "is not a finite number in range";
    out = static_cast<T>(number);
  } else {
    static_assert(std::is_same_v<T, std::string>, "jsonFieldProblem reads bool, integers, floating point and strings");
    if (!value.is_string()) return "is not a string";
    out = value.get<std::string>();
  }
  return nullptr;
}

// Reads `object[key]` into `out` when present (false when absent); a value of the wrong kind
// throws tscope::Error "WHERE: field 'KEY' is not ... (got ...)".
template <typename T>
bool readJsonField(const nlohmann::json& object, const char* key, T& out, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) return false;
  if (const char* problem = jsonFieldProblem(*it, out))
    throw Error(where + ": field '" + key + "' " + problem + " (got " + (it->is_number() ? it->dump() : it->type_name()) + ")");
  return true;
}

// The member `key` of object `j` (`where` names it in messages) into `out`: a missing member throws
// "WHERE: missing "KEY"" when required (else leaves `out` alone), a wrong one "WHERE: "KEY" is not ...".
// The readers of tscope's own result files (training comparisons, sweeps) use these two.
template <typename T>
void readField(const nlohmann::json& j, const char* key, T& out, const std::string& where, bool required = true) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw Error(where + ": missing \"" + key + "\"");
    return;
  }
  if (const char* problem = jsonFieldProblem(*it, out)) throw Error(where + ": \"" + key + "\" " + problem);
}

// The array member `key` of `j`, every element checked as jsonFieldProblem does.
template <typename T>
std::vector<T> readArray(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end()) throw Error(where + ": missing \"" + key + "\"");
  if (!it->is_array()) throw Error(where + ": \"" + key + "\" is not an array");
  std::vector<T> values(it->size());
  for (size_t i = 0; i < values.size(); ++i)
    if (const char* problem = jsonFieldProblem((*it)[i], values[i])) throw Error(where + ": \"" + key + "\"[" + std::to_string(i) + "] " + problem);
  return values;
}

// The header every tscope result file opens with: an object whose "format" is `format` and whose
// "version" is `version`; throws "WHERE: ..." naming what differs.
inline void checkFormatHeader(const nlohmann::json& j, const std::string& format, int version, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a JSON object");
  std::string found;
  readField(j, "format", found, where);
  if (found != format) throw Error(where + ": \"format\" is \"" + found + "\", expected \"" + format + "\"");
  int number = 0;
  readField(j, "version", number, where);
  if (number != version)
    throw Error(where + ": version " + std::to_string(number) + " is not supported (this tscope reads version " + std::to_string(version) + ")");
}

// Reads and parses a JSON file of at most maxBytes. Throws tscope::Error naming the path: "cannot
// read", "N MB, larger than a WHAT may be (M MB)", "not JSON: ...".
nlohmann::json readJsonFile(const std::string& path, uintmax_t maxBytes, const std::string& what);

}  // namespace tscope
