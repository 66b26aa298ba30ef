// The one command-line parser, of tscope-cli (`tscope-cli COMMAND --flag value --switch ...`) and of
// the tscope window (`tscope --flag value ...`).
// Every flag must be declared by the command; anything else is an error naming the flag.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tscope {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // valueFlags take one value; switches take none. Throws UsageError on unknown or repeated
  // flags, a missing value, or a positional argument.
  Args(const std::string& command, const std::vector<std::string>& argv, const std::set<std::string>& valueFlags,
       const std::set<std::string>& switches);

  bool has(const std::string& flag) const { return values_.count(flag) || switches_.count(flag); }
  std::string str(const std::string& flag) const;  // throws UsageError if absent
  std::string str(const std::string& flag, const std::string& fallback) const;
  long long integer(const std::string& flag, long long fallback, long long min, long long max) const;
  double number(const std::string& flag, double fallback, double min, double max) const;
  std::vector<int> intList(const std::string& flag) const;  // "1,2,3"
  // "a,b,c" (items may be empty: the caller judges them); the fallback when the flag is absent.
  std::vector<std::string> list(const std::string& flag, const std::string& fallback) const;

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_;
};

}  // namespace tscope
