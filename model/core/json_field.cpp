// Reading a whole JSON file with a size limit (json_field.h), for the readers of tscope's result
// files, so each names the file and refuses a huge one the same way.
#include "model/core/json_field.h"

#include "model/core/file_check.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tscope {

nlohmann::json readJsonFile(const std::string& path, uintmax_t maxBytes, const std::string& what) {
  std::error_code ec;
  requireRegularFile(path, what);
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read: " + ec.message());
  if (size > maxBytes)
    throw Error(path + ": " + std::to_string(size >> 20) + " MB, larger than a " + what + " may be (" + std::to_string(maxBytes >> 20) + " MB)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON: " + e.what());
  }
}

}  // namespace tscope
