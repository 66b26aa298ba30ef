// Strict flag parsing with one-line errors that name the flag and what was wrong.
#include "app/common/args.h"

#include <charconv>
#include <cmath>

namespace tscope {

Args::Args(const std::string& command, const std::vector<std::string>& argv, const std::set<std::string>& valueFlags,
           const std::set<std::string>& switches)
    : command_(command) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "' for '" + command + "'");
    const std::string name = arg.substr(2);
    if (valueFlags.count(name)) {
      if (i + 1 >= argv.size()) throw UsageError("flag --" + name + " needs a value");
      if (values_.count(name)) throw UsageError("flag --" + name + " given twice");
      values_[name] = argv[++i];
    } else if (switches.count(name)) {
      switches_.insert(name);
    } else {
      throw UsageError("unknown flag --" + name + " for '" + command + "'");
    }
  }
}

std::string Args::str(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) throw UsageError("'" + command_ + "' needs --" + flag);
  return it->second;
}

std::string Args::str(const std::string& flag, const std::string& fallback) const {
  auto it = values_.find(flag);
  return it == values_.end() ? fallback : it->second;
}

long long Args::integer(const std::string& flag, long long fallback, long long min, long long max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  long long value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) throw UsageError("--" + flag + " expects an integer (got '" + s + "')");
  if (value < min || value > max)
    throw UsageError("--" + flag + " must be between " + std::to_string(min) + " and " + std::to_string(max) + " (got " + s + ")");
  return value;
}

double Args::number(const std::string& flag, double fallback, double min, double max) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) throw UsageError("--" + flag + " expects a number (got '" + s + "')");
  if (value < min || value > max)
    throw UsageError("--" + flag + " must be between " + std::to_string(min) + " and " + std::to_string(max) + " (got " + s + ")");
  return value;
}

std::vector<std::string> Args::list(const std::string& flag, const std::string& fallback) const {
  const std::string s = str(flag, fallback);
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    items.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

std::vector<int> Args::intList(const std::string& flag) const {
  std::vector<int> out;
  for (const std::string& item : list(flag, str(flag))) {
    int value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw UsageError("--" + flag + " expects comma-separated integers (bad item '" + item + "')");
    out.push_back(value);
  }
  return out;
}

}  // namespace tscope
