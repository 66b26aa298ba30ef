// The GUI draws the session layer (app/session: Session, Snapshot, AppState, Tasks, the panel
// catalogue, lessons), whose names live in tscope::session: tscope::gui uses them unqualified.
// Every app/gui header that includes an app/session header includes this one.
#pragma once

namespace tscope::session {}

namespace tscope::gui {
using namespace tscope::session;
}  // namespace tscope::gui
