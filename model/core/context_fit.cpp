// fitToContext (context_fit.h).
#include "model/core/context_fit.h"

#include <algorithm>

namespace tscope {

ContextFit fitToContext(std::vector<int> ids, int context, int pinned) {
  ContextFit fit;
  const size_t room = static_cast<size_t>(std::max(0, context));
  const size_t front = std::min({ids.size(), room, static_cast<size_t>(std::max(0, pinned))});
  const size_t keep = std::min(ids.size() - front, room - front);  // the last ones after the pinned
  fit.dropped.assign(ids.begin() + front, ids.end() - keep);
  ids.erase(ids.begin() + front, ids.end() - keep);
  fit.kept = std::move(ids);
  return fit;
}

}  // namespace tscope
