// The app's Session (no GL) with an encoder-decoder model, driven as the Translation panel and the
// Next-token panel drive it: the source is encoded once and shown with the encoder's maps, the
// prompt box holds the target after the decoder start token, Generate N decodes the translation
// (the same tokens as greedy decoding by the engine), each target token's probability is the
// engine's softmax, a new source drops the kept decoder work.
#include <gtest/gtest.h>

#include <cmath>

#include "app/session/session.h"
#include "model/generate/generate.h"
#include "model/io/model_io.h"
#include "model/tokenize/tokenizer.h"
#include "model/train/seq2seq_dates.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"
#include "tests/test_session_helpers.h"

using namespace tscope;
using namespace tscope::session;
using tscope::testing::ScratchDir;

namespace {

// A random encoder-decoder over the dates vocabulary, saved as a model directory.
std::string saveDatesModel(const ScratchDir& dir) {
  ModelConfig c = tscope::testing::smallConfig(2, 4, 32, kDateVocabSize, 64);
  c.n_encoder_layer = 2;
  c.decoder_start_token_id = kDateDecoderStartId;
  c.eos_token_id = kDateEndId;
  c.tokenizer = "char";
  const Weights w = tscope::testing::randomWeights(c, 3);
  const auto tokenizer = makeCharTokenizer(dateTaskCharacters());
  const std::string path = (dir.path() / "dates").string();
  saveModelDir(path, w, tokenizer.get());
  return path;
}

TEST(SessionEncoderDecoder, EncodesTheSourceAndDecodesTheTarget) {
  ScratchDir dir;
  const std::string path = saveDatesModel(dir);
  Session session(loadModel(path), "cpu");
  const ModelConfig& c = session.config();
  Request request;
  request.source = "the twelfth of march nineteen ninety one";
  request.prompt = "19";
  auto snapshot = tscope::testing::computeSnapshot(session, request);
  ASSERT_TRUE(snapshot);
  ASSERT_EQ(snapshot->error, "");
  EXPECT_EQ(snapshot->sourceIds, dateCharacterIds(request.source));
  ASSERT_TRUE(snapshot->encoder);
  EXPECT_EQ(snapshot->encoder->S, (int)request.source.size());
  EXPECT_EQ(snapshot->encoder->attn.size(), (size_t)c.n_encoder_layer * c.n_head * request.source.size() * request.source.size());
  // The decoder reads "^19".
  EXPECT_EQ(snapshot->ids, (std::vector<int>{kDateDecoderStartId, dateCharacterId('1'), dateCharacterId('9')}));
  EXPECT_EQ(snapshot->trace.S, (int)request.source.size());
  EXPECT_EQ(snapshot->trace.cross.size(), (size_t)c.n_layer * c.n_head * 3 * request.source.size());
  // p('1' | ^) and p('9' | ^1): the engine's softmax over a forward of the whole target.
  {
    auto backend = makeCpuBackend(1);
    const LoadedModel again = loadModel(path);
    Transformer engine(again.weights, *backend);
    engine.encode(dateCharacterIds(request.source));
    const std::vector<float> logits = engine.logitsFor(snapshot->ids);
    ASSERT_EQ(snapshot->targetProbabilities.size(), 2u);
    double worst = 0;
    for (size_t t = 0; t < 2; ++t) {
      double sum = 0;
      for (int v = 0; v < c.vocab_size; ++v) sum += std::exp((double)logits[t * c.vocab_size + v]);
      worst = std::max(worst, std::abs(snapshot->targetProbabilities[t] - std::exp((double)logits[t * c.vocab_size + snapshot->ids[t + 1]]) / sum));
    }
    EXPECT_LT(worst, 1e-5) << "largest difference of the snapshot's target probabilities from the engine's softmax";
  }

  // Generate N with greedy decoding = the engine's greedy generation after "^19".
  Request generate = request;
  generate.sampling.greedy = true;
  generate.generateTokens = 4;
  auto generated = tscope::testing::computeSnapshot(session, generate);
  ASSERT_TRUE(generated && generated->generation);
  const std::vector<int> newIds = generated->generation->newIds;
  ASSERT_FALSE(newIds.empty());
  auto backend = makeCpuBackend(1);
  const LoadedModel again = loadModel(path);
  Transformer engine(again.weights, *backend);
  engine.encode(dateCharacterIds(request.source));
  SamplingParams greedy;
  greedy.greedy = true;
  const std::vector<int> start{kDateDecoderStartId, dateCharacterId('1'), dateCharacterId('9')};
  const GenerationResult expected = tscope::generate(engine, start, 4, greedy, kDateEndId);
  EXPECT_EQ(newIds, expected.ids);

  // Another source: other logits for the same target, and the encoder's maps follow it.
  const std::vector<float> before = snapshot->stages.raw;
  Request other = request;
  other.source = "may first twenty ten";
  auto changed = tscope::testing::computeSnapshot(session, other);
  ASSERT_TRUE(changed);
  ASSERT_EQ(changed->error, "");
  EXPECT_EQ(changed->encoder->S, (int)other.source.size());
  EXPECT_EQ(changed->trace.S, (int)other.source.size());
  double difference = 0;
  for (size_t i = 0; i < before.size(); ++i) difference = std::max(difference, (double)std::fabs(before[i] - changed->stages.raw[i]));
  EXPECT_GT(difference, 1e-5);
  // An empty source is one clear error, and the session keeps running.
  Request empty = request;
  empty.source = "";
  auto failed = tscope::testing::computeSnapshot(session, empty);
  ASSERT_TRUE(failed);
  EXPECT_NE(failed->error.find("source is empty"), std::string::npos) << failed->error;
  auto recovered = tscope::testing::computeSnapshot(session, request);
  ASSERT_TRUE(recovered);
  EXPECT_EQ(recovered->error, "");
  // A source past the context runs its last n_ctx characters and says how many were dropped.
  Request longSource = request;
  longSource.source = std::string(100, 'a');
  auto fitted = tscope::testing::computeSnapshot(session, longSource);
  ASSERT_TRUE(fitted);
  EXPECT_EQ(fitted->error, "");
  EXPECT_EQ(fitted->sourceIds.size(), (size_t)c.n_positions);
  EXPECT_EQ(fitted->droppedSourceTokens, 100u - c.n_positions);
  // A target past the context keeps the decoder's start token first and drops the target's
  // oldest tokens after it (the decoder never saw a target that does not begin with it); a
  // generation from there stops at the full context.
  Request longTarget = request;
  longTarget.prompt = std::string(100, '1');
  auto cut = tscope::testing::computeSnapshot(session, longTarget);
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->error, "");
  ASSERT_EQ(cut->ids.size(), (size_t)c.n_positions);
  EXPECT_EQ(cut->ids.front(), c.decoder_start_token_id);
  EXPECT_EQ(cut->droppedIds.size(), 101u - c.n_positions);
  EXPECT_EQ(std::count(cut->droppedIds.begin(), cut->droppedIds.end(), c.decoder_start_token_id), 0);
}

}  // namespace
