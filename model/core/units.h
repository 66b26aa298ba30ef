// Numbers as a reader wants them in a line of text. One implementation for the engine's notes
// (the trace's memory cap) and the panels.
#pragma once
#include <string>

namespace tscope {

// "12.0 KiB", "3.50 MiB", "1.1 GiB": bytes in binary units.
std::string formatBytes(double bytes);

}  // namespace tscope
