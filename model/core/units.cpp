#include "model/core/units.h"

#include <cstdio>

namespace tscope {

std::string formatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, unit == 0 ? "%.0f %s" : bytes < 10 ? "%.2f %s" : "%.1f %s", bytes, units[unit]);
  return buffer;
}

}  // namespace tscope
