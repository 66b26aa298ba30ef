// Session files: the model, the prompt, every knob and the selected panel, as JSON. Written
// through a temporary file and a rename; a bad file is refused with one line naming the problem.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "app/session/app_state.h"

namespace tscope::session {

struct SessionFile {
  std::string modelPath;
  AppState state;
  std::string warning;  // one line naming the entries that were left out (bad interventions), or ""
};

void saveSessionFile(const std::string& path, const SessionFile& session);  // throws tscope::Error
SessionFile loadSessionFile(const std::string& path);                       // throws tscope::Error
// The same on the file's text in memory (`name` starts every error message), and the text that
// saveSessionFile writes.
SessionFile sessionFileFromJsonText(const std::string& name, const std::string& text);  // throws tscope::Error
std::string sessionFileToJsonText(const SessionFile& session);

// The AppState fields of a session file (and of a lesson step) read from the object `j` over `s`:
// the fields present are type-checked and set, then the whole state is range-checked. A wrong type
// or range throws tscope::Error "PATH: field 'x' ..."; entries left out (bad interventions, an
// unknown panel name, a bad efficient-attention variant) are named in `warning` (one line). Keys
// not in stateFieldNames() are ignored here.
void readStateFields(const nlohmann::json& j, AppState& s, std::string& warning, const std::string& path);
const std::vector<std::string>& stateFieldNames();  // "prompt", "panel", "layer", ... in file order
// The Preferences part alone, by the same visitor and checks (the user's preferences file,
// user_preferences.h, holds these keys too): read throws tscope::Error as readStateFields does.
void readPreferenceFields(const nlohmann::json& j, Preferences& p, const std::string& path);
void writePreferenceFields(const Preferences& p, nlohmann::json& j);

}  // namespace tscope::session
