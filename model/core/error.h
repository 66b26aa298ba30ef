// The one exception type the engine throws for bad input (files, configs, prompts, flags).
// Its message is a single line that names the problem; callers show it and carry on or exit.
#pragma once
#include <stdexcept>
#include <string>

namespace tscope {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tscope
