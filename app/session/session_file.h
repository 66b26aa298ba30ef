// Session files: the model, the prompt, every knob and the selected panel, as JSON. Written
// through a temporary file and a rename; a bad file is refused with one line naming the problem.
#pragma once
#include <string>

#include "app/session/app_state.h"

namespace tscope::gui {

struct SessionFile {
  std::string modelPath;
  AppState state;
  std::string warning;  // one line naming the entries that were left out (bad interventions), or ""
};

void saveSessionFile(const std::string& path, const SessionFile& session);  // throws tscope::Error
SessionFile loadSessionFile(const std::string& path);                        // throws tscope::Error
// The same on the file's text in memory (`name` starts every error message), and the text that
// saveSessionFile writes.
SessionFile sessionFileFromJsonText(const std::string& name, const std::string& text);  // throws tscope::Error
std::string sessionFileToJsonText(const SessionFile& session);

}  // namespace tscope::gui
