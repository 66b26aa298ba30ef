// A lesson check's answer as the live model gives it: read off the session's snapshot (the
// next-token distribution, the attention maps it traced, the MoE routing) or, for parameter
// counts, computed from the step's architecture by the cost model the Architecture panel uses.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "app/session/lesson.h"
#include "app/session/session.h"
#include "model/core/error.h"
#include "model/nn/trace_views.h"
#include "model/theory/cost.h"

namespace tscope::session {

namespace {
std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\n") - begin + 1);
}

// The answer is the choice with the highest score; "" with `why` when a score is unknown.
struct Best {
  std::string choice;
  double score = -INFINITY;
  void offer(const std::string& c, double s) {
    if (s > score) choice = c, score = s;
  }
};

std::string decided(const std::string& answer, const std::string& reason, std::string* why) {
  if (why) *why = answer.empty() ? reason : "";
  return answer;
}

// The query position: the state's token, or the last one (-1); -1 when past the prompt.
int queryOf(const Snapshot& snapshot, const AppState& state) {
  const int T = (int)snapshot.ids.size();
  const int query = state.token < 0 ? T - 1 : state.token;
  return query < T ? query : -1;
}

// "L.H" -> layer and head; false when it is not two integers with a dot.
bool parseHead(const std::string& text, int& layer, int& head) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos) return false;
  const char* end = text.data() + text.size();
  auto a = std::from_chars(text.data(), text.data() + dot, layer);
  auto b = std::from_chars(text.data() + dot + 1, end, head);
  return a.ec == std::errc() && a.ptr == text.data() + dot && b.ec == std::errc() && b.ptr == end;
}

// "124M", "1.5B", "85K", "2e6" or "123456" -> the number; NaN when it is none of these.
double parseCount(const std::string& text) {
  double value = 0;
  const std::string t = trimmed(text);
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || !(value > 0)) return NAN;
  const std::string suffix(ptr, t.data() + t.size());
  if (suffix.empty()) return value;
  if (suffix == "K" || suffix == "k") return value * 1e3;
  if (suffix == "M") return value * 1e6;
  if (suffix == "B" || suffix == "G") return value * 1e9;
  if (suffix == "T") return value * 1e12;
  return NAN;
}

std::string nextToken(const LessonCheck& check, const Snapshot& snapshot, const Session& session, std::string* why) {
  const std::vector<float>& probs = snapshot.stages.raw;  // the model's own softmax, before any knob
  if (probs.empty() || !session.tokenizer()) return decided("", "no next-token distribution yet", why);
  Best best;
  for (const std::string& choice : check.choices) {
    const std::vector<int> ids = session.tokenizer()->encode(choice);
    if (ids.empty() || ids[0] < 0 || ids[0] >= (int)probs.size()) return decided("", "the choice \"" + choice + "\" has no token", why);
    best.offer(choice, probs[ids[0]]);
  }
  return decided(best.choice, "", why);
}

std::string attendedToken(const LessonCheck& check, const Snapshot& snapshot, const Session& session, const AppState& state, std::string* why) {
  const std::optional<Snapshot::LayerMaps> maps = snapshot.maps(state.layer);
  const int query = queryOf(snapshot, state);
  if (!maps) return decided("", snapshot.mapsMissing(state.layer), why);
  if (state.head >= maps->rows->heads())
    return decided("", "layer " + std::to_string(state.layer) + " head " + std::to_string(state.head) + " was not traced", why);
  if (query < 0 || !session.tokenizer()) return decided("", "the step's token is past the prompt", why);
  const int T = snapshot.trace.T;
  const std::vector<float> map = maps->rows->map(maps->index, state.head, false);  // (T, T)
  const auto row = map.begin() + (size_t)query * T;
  const int key = (int)(std::max_element(row, row + query + 1) - row);
  const std::string text = trimmed(session.tokenizer()->tokenBytes(snapshot.ids[key]));
  for (const std::string& choice : check.choices)
    if (trimmed(choice) == text) return decided(choice, "", why);
  return decided("", "the head attends most to \"" + text + "\" (position " + std::to_string(key) + "), which is not a choice", why);
}

std::string head(const LessonCheck& check, const Snapshot& snapshot, const AppState& state, std::string* why) {
  const int query = queryOf(snapshot, state);
  if (query < 0) return decided("", "the step's token is past the prompt", why);
  int key = check.key;
  if (key < 0) {  // the induction target: the token after the query token's previous occurrence
    for (int p = query - 1; p >= 0 && key < 0; --p)
      if (snapshot.ids[p] == snapshot.ids[query]) key = p + 1;
    if (key < 0) return decided("", "the query token does not occur earlier in the prompt (no induction target)", why);
  }
  if (key > query) return decided("", "key position " + std::to_string(key) + " is after the query " + std::to_string(query), why);
  const int T = snapshot.trace.T;
  Best best;
  for (const std::string& choice : check.choices) {
    int layer = 0, h = 0;
    if (!parseHead(choice, layer, h)) return decided("", "the choice \"" + choice + "\" is not L.H", why);
    const std::optional<Snapshot::LayerMaps> maps = snapshot.maps(layer);
    if (!maps) return decided("", "head " + choice + ": " + snapshot.mapsMissing(layer), why);
    if (h < 0 || h >= maps->rows->heads()) return decided("", "head " + choice + " was not traced", why);
    best.offer(choice, maps->rows->map(maps->index, h, false)[(size_t)query * T + key]);
  }
  return decided(best.choice, "", why);
}

std::string expert(const LessonCheck& check, const Snapshot& snapshot, const AppState& state, std::string* why) {
  const std::vector<MoeRouting>& moe = snapshot.trace.moe;
  const int query = queryOf(snapshot, state);
  if (state.layer >= (int)moe.size() || moe[state.layer].tokens == 0)
    return decided("", "layer " + std::to_string(state.layer) + " has no experts", why);
  const MoeRouting& routing = moe[state.layer];
  if (query < 0 || query >= routing.tokens) return decided("", "the step's token is past the prompt", why);
  const auto row = routing.routerProbs.begin() + (size_t)query * routing.experts;  // (T, E)
  const std::string top = std::to_string(std::max_element(row, row + routing.experts) - row);
  for (const std::string& choice : check.choices)
    if (trimmed(choice) == top) return decided(choice, "", why);
  return decided("", "the top expert is " + top + ", which is not a choice", why);
}

std::string parameters(const LessonCheck& check, const std::optional<ModelConfig>& architecture, std::string* why) {
  if (!architecture) return decided("", "no architecture at this step", why);
  const double total = (double)countParameters(*architecture).total;
  Best best;
  for (const std::string& choice : check.choices) {
    const double value = parseCount(choice);
    if (std::isnan(value)) return decided("", "the choice \"" + choice + "\" is not a count like 124M", why);
    best.offer(choice, -std::fabs(std::log(value / total)));
  }
  return decided(best.choice, "", why);
}
// The choice whose first token a masked LM ranks highest behind the prompt's first [MASK] (a choice
// outside the fillers shown ranks below them all).
std::string filledToken(const LessonCheck& check, const Snapshot& snapshot, const Session& session, std::string* why) {
  if (!session.config().masked_lm) return decided("", "the model is not a masked language model", why);
  if (snapshot.maskFills.empty()) return decided("", "the prompt has no [MASK]", why);
  const std::vector<FillCandidate>& top = snapshot.maskFills.front().top;
  Best best;
  for (const std::string& choice : check.choices) {
    const std::vector<int> ids = session.tokenizer()->encode(choice);
    if (ids.empty()) return decided("", "the choice \"" + choice + "\" has no token", why);
    const auto found = std::find_if(top.begin(), top.end(), [&](const FillCandidate& c) { return c.id == ids[0]; });
    best.offer(choice, found == top.end() ? -1.0 : found->p);
  }
  return decided(best.choice, "", why);
}
// The choice that names how many tokens the model's tokenizer cuts the step's prompt into (the
// Prompt panel's count; a choice that is no count is an error, a count that is no choice says so).
std::string tokenCount(const LessonCheck& check, const Session& session, const AppState& state, std::string* why) {
  if (!session.tokenizer()) return decided("", "the model has no tokenizer", why);
  const size_t count = session.tokenizer()->encode(state.prompt).size();
  std::string answer;
  for (const std::string& choice : check.choices) {
    const double value = parseCount(choice);
    if (std::isnan(value) || value != std::floor(value)) return decided("", "the choice \"" + choice + "\" is not a count of tokens", why);
    if (value == (double)count) answer = choice;
  }
  return decided(answer, "the prompt is " + std::to_string(count) + " tokens, which is not a choice", why);
}

// The source's words and the weight `row` (S, one decoder step's cross-attention) puts on each: a
// token counts toward the word its first non-space byte is in (characters and BPE tokens alike).
std::map<std::string, double> sourceWordWeights(const Snapshot& snapshot, const Tokenizer& tokenizer, const float* row) {
  std::map<std::string, double> weights;
  std::string word;
  double weight = 0;
  auto close = [&] {
    if (!word.empty()) weights[word] += weight;
    word.clear();
    weight = 0;
  };
  const size_t S = std::min<size_t>(snapshot.sourceIds.size(), snapshot.trace.S);
  for (size_t j = 0; j < S; ++j) {
    const std::string bytes = tokenizer.tokenBytes(snapshot.sourceIds[j]);
    bool counted = false;
    for (const char c : bytes) {
      if (c == ' ' || c == '\n' || c == '\t') {
        close();
        continue;
      }
      if (!counted) weight += row[j], counted = true;
      word += c;
    }
  }
  close();
  return weights;
}

std::string sourceWord(const LessonCheck& check, const Snapshot& snapshot, const Session& session, const AppState& state, std::string* why) {
  const Trace& trace = snapshot.trace;
  if (!session.config().isEncoderDecoder() || trace.S == 0) return decided("", "the model is not an encoder-decoder", why);
  const std::optional<int> index = trace.capturedIndex(state.layer);
  if (!index) return decided("", "decoder layer " + std::to_string(state.layer) + "'s cross-attention was not traced", why);
  if (state.head >= trace.H) return decided("", "head " + std::to_string(state.head) + " was not traced", why);
  const int query = queryOf(snapshot, state);
  if (query < 0 || query >= trace.T || !session.tokenizer()) return decided("", "the step's token is past the target", why);
  const std::vector<float> map = crossAttentionShown(trace, *index, state.head, state.averageHeads);  // (T, S): what the panel shows
  const std::map<std::string, double> weights = sourceWordWeights(snapshot, *session.tokenizer(), map.data() + (size_t)query * trace.S);
  Best best;
  for (const std::string& choice : check.choices) {
    const auto found = weights.find(trimmed(choice));
    if (found == weights.end()) return decided("", "\"" + choice + "\" is not a word of the source", why);
    best.offer(choice, found->second);
  }
  return decided(best.choice, "", why);
}
}  // namespace

std::string lessonCheckAnswer(const LessonCheck& check, const Snapshot& snapshot, const Session& session, const AppState& state,
                              const std::optional<ModelConfig>& architecture, std::string* why) {
  if (check.kind == LessonCheckKind::Parameters) return parameters(check, architecture, why);
  if (!snapshot.error.empty()) return decided("", "the model could not run: " + snapshot.error, why);
  switch (check.kind) {
    case LessonCheckKind::NextToken: return nextToken(check, snapshot, session, why);
    case LessonCheckKind::AttendedToken: return attendedToken(check, snapshot, session, state, why);
    case LessonCheckKind::Head: return head(check, snapshot, state, why);
    case LessonCheckKind::Expert: return expert(check, snapshot, state, why);
    case LessonCheckKind::FilledToken: return filledToken(check, snapshot, session, why);
    case LessonCheckKind::TokenCount: return tokenCount(check, session, state, why);
    case LessonCheckKind::SourceWord: return sourceWord(check, snapshot, session, state, why);
    case LessonCheckKind::Parameters: break;
  }
  return decided("", "unknown check kind", why);
}

namespace {
// Posts `request` and waits for its snapshot (the worker is ours alone, so the newest one is it).
std::shared_ptr<const Snapshot> computeNow(Session& session, const Request& request) {
  session.post(request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (session.busy()) {
    if (std::chrono::steady_clock::now() > deadline) throw Error(session.modelPath() + ": the forward took more than 5 minutes");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto snapshot = session.latest();
  if (!snapshot) throw Error(session.modelPath() + ": the session published nothing");
  return snapshot;
}
}  // namespace

std::vector<LessonStepCheck> runLessonChecks(const Lesson& lesson, const std::string& modelsDir, const std::string& backend) {
  std::map<std::string, std::unique_ptr<Session>> sessions;
  std::vector<LessonStepCheck> out;
  for (int i = 0; i < (int)lesson.steps.size(); ++i) {
    LessonStepCheck result;
    result.step = i;
    result.model = lessonModelAtStep(lesson, i, modelsDir);
    result.check = lesson.steps[i].check;
    result.modelMissing = result.model.empty() || !std::filesystem::is_directory(result.model);
    Session* session = nullptr;
    if (!result.modelMissing) {
      auto& slot = sessions[result.model];
      if (!slot) slot = std::make_unique<Session>(loadModel(result.model), backend);
      session = slot.get();
    }
    const ModelConfig config = session ? session->config() : ModelConfig{};
    const AppState state = stateAtStep(lesson, i, AppState{}, config, &result.stateWarning);
    if (result.check) {
      const std::optional<ModelConfig> architecture = architectureAtStep(lesson, i, config);
      if (session || result.check->kind == LessonCheckKind::Parameters) {
        // Parameters needs no model: without one it is decided from the architecture alone.
        result.liveAnswer =
            session ? lessonCheckAnswer(*result.check, *computeNow(*session, requestFor(state, config)), *session, state, architecture, &result.why)
                    : parameters(*result.check, architecture, &result.why);
      } else {
        result.why = "the model " + result.model + " is not installed";
      }
      result.agrees = result.liveAnswer == result.check->answer;
    }
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace tscope::session
