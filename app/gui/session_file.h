// Session files: the model, the prompt, every knob and the selected panel, as JSON. Written
// through a temporary file and a rename; a bad file is refused with one line naming the problem.
#pragma once
#include <string>

#include "panels.h"

namespace tscope::gui {

struct SessionFile {
  std::string modelPath;
  AppState state;
};

void saveSessionFile(const std::string& path, const SessionFile& session);  // throws tscope::Error
SessionFile loadSessionFile(const std::string& path);                        // throws tscope::Error

}  // namespace tscope::gui
