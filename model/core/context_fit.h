// A prompt longer than the model's context: the app, the CLI and the lesson checks run its last
// `context` tokens and report the earlier ones as dropped (one implementation, so all keep the same
// tokens). Plain token ids: it needs no model, so it lives here rather than beside generation.
#pragma once
#include <vector>

namespace tscope {

// The first `pinned` tokens are always kept (an encoder-decoder's decoder start token: the decoder
// has only ever seen targets that begin with it), then the last context - pinned.
struct ContextFit {
  std::vector<int> kept;     // the pinned tokens and the last min(T, context) - pinned
  std::vector<int> dropped;  // the tokens between them, in order (empty when the prompt fits)
};
ContextFit fitToContext(std::vector<int> ids, int context, int pinned = 0);

}  // namespace tscope
