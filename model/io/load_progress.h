// How far a model load is, for the app's status bar: a loader calls it after each tensor it places
// (`done` of `total`). It may throw to stop the load (the app's open task does when the open was
// cancelled or replaced); the load then frees what it made and the exception leaves loadModel.
#pragma once
#include <functional>

namespace tscope {

using LoadProgress = std::function<void(int done, int total)>;

}  // namespace tscope
