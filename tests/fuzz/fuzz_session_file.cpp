// Fuzzes the app's session files (JSON: model, prompt, knobs, panel) and, on the same bytes, the
// user's preferences file (user_preferences.h: the same JSON shape). An accepted file must keep its
// knobs inside the ranges the app relies on and must survive a save and a reload unchanged.
#include <cmath>

#include "app/session/session_file.h"
#include "app/session/user_preferences.h"
#include "fuzz_check.h"
#include "model/core/error.h"

using namespace tscope;

namespace {

void checkPreferences(const std::string& text) {
  session::UserPreferences prefs;
  try {
    prefs = session::userPreferencesFromJsonText("fuzz.preferences.json", text);
  } catch (const Error&) {
    return;
  }
  FUZZ_CHECK(prefs.preferences.fontScale >= 0.5f && prefs.preferences.fontScale <= 4.0f, "preferences font_scale");
  FUZZ_CHECK(!prefs.window || (prefs.window->width >= 320 && prefs.window->height >= 240), "preferences window");
  const std::string saved = session::userPreferencesToJsonText(prefs);
  try {
    FUZZ_CHECK(session::userPreferencesFromJsonText("saved.preferences.json", saved) == prefs, "preferences changed on a round trip: " + saved);
  } catch (const Error& e) {
    FUZZ_CHECK(false, std::string("saved preferences do not load: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  checkPreferences(fuzz::asString(data, size));
  session::SessionFile session;
  try {
    session = session::sessionFileFromJsonText("fuzz.session.json", fuzz::asString(data, size));
  } catch (const Error&) {
    return 0;
  }
  const session::AppState& state = session.state;
  FUZZ_CHECK(static_cast<int>(state.panel) >= 0 && state.panel < session::PanelId::Count, "panel");
  FUZZ_CHECK(*validateSamplingParams(state.sampling) == '\0', validateSamplingParams(state.sampling));
  FUZZ_CHECK(state.fontScale >= 0.5f && state.fontScale <= 4.0f, "font_scale");
  FUZZ_CHECK(state.layer >= 0 && state.head >= 0 && state.token >= -1, "selection");
  FUZZ_CHECK(state.beamWidth >= 0 && state.beamWidth <= 16 && state.beamSteps >= 1 && state.beamSteps <= 64, "beam");
  FUZZ_CHECK(state.moeTopK >= 0 && state.moeTopK <= 1024 && std::isfinite(state.moeCapacityFactor), "moe knobs");
  const std::string saved = session::sessionFileToJsonText(session);
  session::SessionFile reloaded;
  try {
    reloaded = session::sessionFileFromJsonText("saved.session.json", saved);
  } catch (const Error& e) {
    FUZZ_CHECK(false, std::string("a saved session does not load: ") + e.what());
  }
  FUZZ_CHECK(session::sessionFileToJsonText(reloaded) == saved, "session changed on a save/load round trip: " + saved);
  return 0;
}
