// llama2.c checkpoints (model/io/llama2c.h) and the score-based SentencePiece tokenizer
// (model/tokenize/tokenizer_spm.h): logits of every header version, tied and untied, against the
// independent float64 numpy forward of tests/golden/llama2c_reference.py (run here, at test time),
// token ids against its run.c encode, and one clear line for every corrupt checkpoint and tokenizer.bin.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/session/file_kinds.h"
#include "model/io/llama2c.h"
#include "model/io/model_io.h"
#include "model/io/npy.h"
#include "model/nn/backend.h"
#include "model/nn/transformer.h"
#include "model/tokenize/tokenizer_spm.h"
#include "tests/golden_checkpoints.h"
#include "tests/test_files.h"
#include "tests/test_helpers.h"

namespace fs = std::filesystem;
using namespace tscope;
using namespace tscope::testing;

namespace {

const fs::path& goldenDir() { return goldenCheckpoints("tscope_llama2c_golden", "llama2c_reference.py"); }

// One variant of the reference: loaded by loadModel as llama2.c's, its config, then the logits of
// both host backends against the numpy forward's.
void expectMatchesReference(const std::string& variant, bool shared, int kvHeads, bool floatsInPlace) {
  SCOPED_TRACE(variant);
  const fs::path folder = goldenDir() / variant;
  LoadedModel model = loadModel((folder / "model.bin").string());
  EXPECT_EQ(model.format, "llama2c-bin");
  ASSERT_NE(model.tokenizer, nullptr) << model.tokenizerNote;
  EXPECT_EQ(model.tokenizer->kind(), TokenizerKind::Spm);
  EXPECT_EQ(model.tokenizer->vocabSize(), 300);
  const ModelConfig& c = model.weights.config();
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.d_ff, 172);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.kvHeads(), kvHeads);
  EXPECT_EQ(c.vocab_size, 300);
  EXPECT_EQ(c.n_positions, 32);
  EXPECT_EQ(c.tie_word_embeddings, shared);
  EXPECT_EQ(c.norm, NormKind::RmsNorm);
  EXPECT_EQ(c.activation, Activation::SwiGlu);
  EXPECT_EQ(c.position_encoding, PositionEncoding::Rope);
  EXPECT_EQ(c.position_base, 10000);
  EXPECT_EQ(c.layer_norm_epsilon, 1e-5);
  EXPECT_EQ(model.weights.readsInPlace("wte.weight"), floatsInPlace);
  EXPECT_EQ(model.weights.readsInPlace("h.1.ln_2.weight"), floatsInPlace || variant.starts_with("v2"));  // version 2 keeps norms in float32
  const NpyArray tokens = readNpy((folder / "tokens.npy").string());
  const NpyArray logits = readNpy((folder / "logits.npy").string());
  const std::vector<int> ids(tokens.data.begin(), tokens.data.end());
  for (auto makeBackend : {makeReferenceBackend, +[]() { return makeCpuBackend(1); }}) {
    auto backend = makeBackend();
    Transformer transformer(model.weights, *backend);
    const Difference diff = compare(transformer.logitsFor(ids), logits.data);
    EXPECT_LT(diff.relative(), 1e-4) << backend->name() << " logits: " << diff.describe();
    EXPECT_GT(diff.maxRef, 1.0) << "logits too small to tell anything apart";
    std::printf("%-9s %-16s logits: %s\n", backend->name().c_str(), variant.c_str(), diff.describe().c_str());
  }
}

}  // namespace

TEST(Llama2c, LegacyCheckpointMatchesNumpyForward) {
  expectMatchesReference("legacy_shared", true, 2, true);
  expectMatchesReference("legacy_unshared", false, 2, true);
}

TEST(Llama2c, Version1CheckpointMatchesNumpyForward) {
  expectMatchesReference("v1_shared", true, 1, true);
  expectMatchesReference("v1_unshared", false, 2, true);
}

// Version 2's int8 matrices (Q8_0, groups of 64) are dequantized at load; the reference runs the
// same dequantized weights.
TEST(Llama2c, Version2Q80CheckpointMatchesNumpyForward) {
  expectMatchesReference("v2_shared", true, 4, false);
  expectMatchesReference("v2_unshared", false, 2, false);
}

TEST(Llama2c, TokenizerIdsEqualRunCEncode) {
  const auto tokenizer = loadLlama2cTokenizer((goldenDir() / "tokenizer.bin").string(), 300);
  std::ifstream in(goldenDir() / "encodings.json");
  const nlohmann::json encodings = nlohmann::json::parse(in);
  ASSERT_GE(encodings.size(), 20u);
  for (const auto& entry : encodings) {
    std::string text;
    const std::string hex = entry["hex"];
    for (size_t i = 0; i + 1 < hex.size(); i += 2) text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    SCOPED_TRACE(printableBytes(text));
    const std::vector<int> ids = tokenizer->encode(text);
    EXPECT_EQ(ids, entry["ids"].get<std::vector<int>>());
    // Every byte comes back (byte fallback), after the dummy prefix; after BOS without it.
    EXPECT_EQ(tokenizer->decode(ids), text.empty() ? "" : " " + text);
    std::vector<int> withBos = {1};
    withBos.insert(withBos.end(), ids.begin(), ids.end());
    EXPECT_EQ(tokenizer->decode(withBos), "<s>" + text);
  }
  EXPECT_EQ(tokenizer->kindName(), "spm-bpe");
  EXPECT_NE(tokenizer->description().find("llama2.c tokenizer.bin"), std::string::npos) << tokenizer->description();
  EXPECT_EQ(tokenizer->bosId(), 1);
  EXPECT_EQ(tokenizer->eotId(), 1);            // run.c stops generating at BOS, which begins every TinyStories story
  EXPECT_EQ(tokenizer->tokenBytes(1), "<s>");  // tokenizer.py's "\n<s>\n"
  EXPECT_EQ(tokenizer->tokenBytes(2), "</s>");
  EXPECT_EQ(tokenizer->tokenBytes(3 + 0xE4), "\xE4");  // <0xE4>: the raw byte
  EXPECT_EQ(tokenizer->tokenText(3 + 0xE4), "\\xE4");
  EXPECT_EQ(tokenizer->tokenBytes(259), " ");
  EXPECT_THROW(tokenizer->decode(std::vector<int>{300}), Error);
}

// The score-based BPE as a GGUF file's "llama" tokenizer gives it: "▁" for spaces, token types.
TEST(Llama2c, ScoreBpeTakesGgufStylePiecesAndTypes) {
  const std::string mark = "\xE2\x96\x81";
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>", "<0x41>", "a", "b", mark, "<", "s", ">", "<s", mark + "a", "ab", "aba", "ba", "x"};
  std::vector<float> scores = {0, 0, 0, 0, -10, -10, -10, -10, -10, -10, -1, -8, -5, -0.25f, -6, -3};
  std::vector<int> types = {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5};
  ScoreBpeOptions options;
  options.name = "tiny.gguf";
  options.bosId = 1;
  options.eosId = 2;
  options.unkId = 0;
  const auto tokenizer = makeScoreBpeTokenizer(pieces, scores, types, options);
  // The highest-scoring pair first, one merge at a time: "aba" (made from "ab" + "a") outranks the
  // second "ab", which merging every "ab" first (rank order) would have taken.
  EXPECT_EQ(tokenizer->encode("ababa"), (std::vector<int>{6, 13, 14}));  // ▁ aba ba
  EXPECT_EQ(tokenizer->encode("a"), (std::vector<int>{11}));             // ▁a
  // A control token is never spelled by text, an unused one never matched; a character with no piece
  // and no byte token is <unk> (only <0x41> "A" exists).
  EXPECT_EQ(tokenizer->encode("<s>"), (std::vector<int>{6, 10, 9}));  // ▁ <s >
  EXPECT_EQ(tokenizer->encode("xA"), (std::vector<int>{6, 0, 3}));
  EXPECT_EQ(tokenizer->decode(tokenizer->encode("a ab")), " a ab");
  EXPECT_EQ(tokenizer->tokenBytes(11), " a");
  EXPECT_EQ(tokenizer->tokenBytes(3), "A");
  EXPECT_EQ(tokenizer->decode(std::vector<int>{1, 11, 6, 12}), "<s>a ab");
  options.addDummyPrefix = false;
  EXPECT_EQ(makeScoreBpeTokenizer(pieces, scores, types, options)->encode("ab a"), (std::vector<int>{12, 11}));
  EXPECT_EQ(tokenizer->encode(""), std::vector<int>{});
  EXPECT_EQ(tokenizer->eotId(), 2);
  EXPECT_EQ(tokenizer->bosId(), 1);
}

TEST(Llama2c, ScoreBpeRefusesBadVocabularies) {
  const std::vector<std::string> pieces = {"<unk>", "a"};
  ScoreBpeOptions options;
  options.name = "v.gguf";
  options.unkId = 0;
  auto refusal = [&](std::vector<std::string> p, std::vector<float> s, std::vector<int> t, const ScoreBpeOptions& o) {
    return errorMessage([&] { makeScoreBpeTokenizer(std::move(p), std::move(s), std::move(t), o); });
  };
  expectMentions(refusal({}, {}, {}, options), {"v.gguf", "no tokens"});
  expectMentions(refusal(pieces, {0}, {}, options), {"v.gguf", "1 scores for 2 tokens"});
  expectMentions(refusal(pieces, {0, 0}, {2}, options), {"v.gguf", "1 token types for 2 tokens"});
  expectMentions(refusal(pieces, {0, 0}, {2, 9}, options), {"v.gguf", "token 1 has type 9"});
  expectMentions(refusal(pieces, {0, NAN}, {}, options), {"v.gguf", "token 1", "NaN score"});
  expectMentions(refusal(pieces, {0, 0}, {2, 6}, options), {"v.gguf", "byte token but not spelled <0xNN>"});
  ScoreBpeOptions badBos = options;
  badBos.bosId = 2;
  expectMentions(refusal(pieces, {0, 0}, {}, badBos), {"v.gguf", "BOS id 2 is outside the vocabulary"});
  ScoreBpeOptions noUnknown = options;
  noUnknown.unkId = -1;
  expectMentions(refusal(pieces, {0, 0}, {}, noUnknown), {"v.gguf", "no byte token <0x00>", "no unknown token"});
}

namespace {

// A legacy llama2.c file: the 7 header ints and `floats` zero floats (held as floats: 4-byte aligned).
struct BinFile {
  std::vector<float> storage;
  size_t size = 0;
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(storage.data()); }
};

// The float count of a legacy file: run.c's tensors for these sizes, the classifier when unshared.
int64_t legacyFloats(int64_t dim, int64_t hidden, int64_t layers, int64_t heads, int64_t kv, int64_t vocab, int64_t seq) {
  const int64_t head = dim / heads, kvDim = kv * head;
  const int64_t total = std::llabs(vocab) * dim + layers * (2 * dim + 2 * dim * dim + 2 * kvDim * dim + 3 * dim * hidden) + dim + seq * head;
  return total + (vocab < 0 ? -vocab * dim : 0);
}

BinFile legacyFile(std::vector<int32_t> header, int64_t floats, int64_t extraBytes = 0) {
  BinFile file;
  file.size = static_cast<size_t>(28 + floats * 4 + extraBytes);
  file.storage.assign((file.size + 3) / 4 + 1, 0.0f);
  std::memcpy(file.storage.data(), header.data(), 28);
  return file;
}

// A version 1 or 2 header (256 bytes) and `floats` zero floats after it.
BinFile versionedFile(uint32_t magic, int32_t version, std::vector<int32_t> sizes, uint8_t shared, int32_t groupSize, size_t bodyBytes) {
  BinFile file;
  file.size = 256 + bodyBytes;
  file.storage.assign(file.size / 4 + 1, 0.0f);
  auto* bytes = reinterpret_cast<uint8_t*>(file.storage.data());
  std::memcpy(bytes, &magic, 4);
  std::memcpy(bytes + 4, &version, 4);
  std::memcpy(bytes + 8, sizes.data(), 28);
  bytes[36] = shared;
  std::memcpy(bytes + 37, &groupSize, 4);
  return file;
}

std::string checkpointError(const BinFile& file) {
  return errorMessage([&] { llama2cCheckpointFromBytes("m.bin", file.bytes(), file.size); });
}

}  // namespace

TEST(Llama2c, CorruptCheckpointsAreRefusedInOneLine) {
  const int64_t good = legacyFloats(64, 172, 2, 4, 2, 300, 32);
  const std::vector<int32_t> header = {64, 172, 2, 4, 2, 300, 32};
  const BinFile legacy = legacyFile(header, good);
  EXPECT_EQ(llama2cCheckpointFromBytes("m.bin", legacy.bytes(), legacy.size).config().n_layer, 2);
  expectMentions(checkpointError(legacyFile(header, good, -4)),
                 {"m.bin", "header says 2 layers of dim 64", "bytes, " + std::to_string(28 + good * 4) + " expected"});
  expectMentions(checkpointError(legacyFile(header, good, 4)), {"m.bin", "header says 2 layers", std::to_string(28 + good * 4 + 4) + " bytes"});
  expectMentions(checkpointError(legacyFile({64, 172, 0, 4, 2, 300, 32}, good)), {"m.bin", "n_layers is 0 (it must be positive)"});
  expectMentions(checkpointError(legacyFile({64, 172, 2, 5, 5, 300, 32}, good)), {"m.bin", "n_heads 5 does not divide dim 64"});
  expectMentions(checkpointError(legacyFile({64, 172, 2, 4, 3, 300, 32}, good)), {"m.bin", "n_kv_heads 3 does not divide n_heads 4"});
  expectMentions(checkpointError(legacyFile({64, -172, 2, 4, 2, 300, 32}, good)), {"m.bin", "hidden_dim is -172"});
  expectMentions(checkpointError(legacyFile({1 << 30, 172, 2, 4, 2, 300, 32}, good)), {"m.bin", "dim is 1073741824, more than tscope reads"});
  expectMentions(checkpointError(legacyFile({64, 172, 2, 4, 2, 2147483647, 32}, good)), {"m.bin", "vocab_size is 2147483647"});
  expectMentions(checkpointError(legacyFile({12, 172, 2, 4, 2, 300, 32}, good)), {"m.bin", "head size", "is odd"});
  BinFile tiny;
  tiny.storage.assign(4, 0.0f);
  tiny.size = 10;
  expectMentions(checkpointError(tiny), {"m.bin", "truncated", "10 bytes"});
  // Versions 1 and 2: the magic, the version, the flag, the group size, the sizes.
  const std::vector<int32_t> sizes = {64, 172, 2, 4, 2, 300, 32};
  const size_t v1Bytes = static_cast<size_t>(good - 32 * 16) * 4;  // no RoPE tables (2 x seq_len x head_size / 2)
  const BinFile v1 = versionedFile(0x616b3432, 1, sizes, 1, 0, v1Bytes);
  EXPECT_TRUE(llama2cCheckpointFromBytes("m.bin", v1.bytes(), v1.size).config().tie_word_embeddings);
  expectMentions(checkpointError(versionedFile(0x616b3432, 7, sizes, 1, 0, v1Bytes)), {"m.bin", "version 7 is not supported"});
  expectMentions(checkpointError(versionedFile(0x616b3432, 1, sizes, 5, 0, v1Bytes)), {"m.bin", "shared_classifier is 5"});
  expectMentions(checkpointError(versionedFile(0x616b3432, 1, {64, 172, 2, 4, 2, -300, 32}, 1, 0, v1Bytes)), {"m.bin", "vocab_size is -300"});
  expectMentions(checkpointError(versionedFile(0x616b3432, 1, {64, 172, 2, 4, 2, 300, 1 << 30}, 1, 0, v1Bytes)), {"m.bin", "seq_len is 1073741824"});
  expectMentions(checkpointError(versionedFile(0x616b3432, 1, sizes, 0, 0, v1Bytes)), {"m.bin", "version 1 header says", "unshared classifier"});
  expectMentions(checkpointError(versionedFile(0x616b3432, 2, sizes, 1, 0, v1Bytes)), {"m.bin", "group size 0 is out of range"});
  expectMentions(checkpointError(versionedFile(0x616b3432, 2, sizes, 1, 48, v1Bytes)), {"m.bin", "group size 48 does not divide"});
  BinFile cut = versionedFile(0x616b3432, 1, sizes, 1, 0, 0);
  cut.size = 100;
  expectMentions(checkpointError(cut), {"m.bin", "truncated", "header needs 256"});
}

TEST(Llama2c, CorruptTokenizerBinIsRefusedInOneLine) {
  const std::string good = readBytes((goldenDir() / "tokenizer.bin").string());
  auto refusal = [&](const std::string& bytes, int vocab = 300) {
    return errorMessage([&] { llama2cTokenizerFromBytes("tokenizer.bin", bytes, vocab); });
  };
  EXPECT_EQ(llama2cTokenizerFromBytes("tokenizer.bin", good, 300)->vocabSize(), 300);
  expectMentions(refusal(good.substr(0, 2)), {"tokenizer.bin", "truncated", "2 bytes"});
  expectMentions(refusal(good.substr(0, good.size() - 1)), {"tokenizer.bin", "token 299 of 300", "run past the end"});
  expectMentions(refusal(good.substr(0, 34)), {"tokenizer.bin", "truncated", "needs its score and length"});
  expectMentions(refusal(good, 290), {"tokenizer.bin", "bytes after the 290 tokens", "tok290.bin"});
  expectMentions(refusal(good, 2), {"tokenizer.bin", "too small"});
  auto withInt = [&](size_t at, int32_t value) {
    std::string bytes = good;
    std::memcpy(bytes.data() + at, &value, 4);
    return bytes;
  };
  // Token 0 ("<unk>", 5 bytes) starts at byte 4: its score, then its length at byte 8.
  expectMentions(refusal(withInt(8, -1)), {"tokenizer.bin", "token 0 of 300", "negative length"});
  expectMentions(refusal(withInt(8, 1 << 30)), {"tokenizer.bin", "token 0 of 300 is 1073741824 bytes long, more than the header's max_token_length"});
  expectMentions(refusal(withInt(0, 3)), {"tokenizer.bin", "is 5 bytes long, more than the header's max_token_length 3"});
  expectMentions(refusal(withInt(4, 0x7fc00000)), {"tokenizer.bin", "token 0", "NaN score"});
}

TEST(Llama2c, LoadModelFindsTheTokenizerOrSaysWhereItLives) {
  ScratchDir dir("tscope_llama2c_load");
  const fs::path model = dir.path() / "stories.bin";
  fs::copy_file(goldenDir() / "legacy_shared" / "model.bin", model);
  EXPECT_TRUE(looksLikeLlama2c(model.string()));
  EXPECT_EQ(session::classifyPath(model.string()), session::FileKind::Model);
  LoadedModel alone = loadModel(model.string());
  EXPECT_EQ(alone.tokenizer, nullptr);
  expectMentions(alone.tokenizerNote, {"no tokenizer.bin", "tok300.bin", "karpathy/llama2.c", "token ids work"});
  // A tokenizer of another vocabulary: the note says why it was not taken.
  const std::string tokenizer = readBytes((goldenDir() / "tokenizer.bin").string());
  writeBytes((dir.path() / "tokenizer.bin").string(), tokenizer + std::string(9, 'x'));
  expectMentions(loadModel(model.string()).tokenizerNote, {"tokenizer.bin", "9 bytes after the 300 tokens"});
  EXPECT_FALSE(looksLikeLlama2c((dir.path() / "tokenizer.bin").string()));
  // tok<V>.bin, the name llama2.c gives a vocabulary of its own, comes first.
  writeBytes((dir.path() / "tok300.bin").string(), tokenizer);
  EXPECT_EQ(loadModel(model.string()).tokenizer->vocabSize(), 300);
  // A .bin that is neither llama2.c's nor llm.c's: the llama2.c reason, and llm.c's magic.
  std::string bytes = readBytes(model.string());
  bytes.resize(bytes.size() - 8);
  writeBytes((dir.path() / "cut.bin").string(), bytes);
  EXPECT_FALSE(looksLikeLlama2c((dir.path() / "cut.bin").string()));
  expectMentions(errorMessage([&] { loadModel((dir.path() / "cut.bin").string()); }),
                 {"cut.bin", "header says 2 layers of dim 64", "nor is it an llm.c checkpoint", "20240326"});
  // A version 1 header is llama2.c's whatever follows: its own reason, not llm.c's.
  const std::string v1 = readBytes((goldenDir() / "v1_unshared" / "model.bin").string());
  writeBytes((dir.path() / "v1.bin").string(), v1.substr(0, v1.size() - 4));
  EXPECT_TRUE(looksLikeLlama2c((dir.path() / "v1.bin").string()));
  const std::string v1Error = errorMessage([&] { loadModel((dir.path() / "v1.bin").string()); });
  expectMentions(v1Error, {"v1.bin", "version 1 header says"});
  EXPECT_EQ(v1Error.find("llm.c"), std::string::npos) << v1Error;
}

// The fuzz target's valid seeds (tests/fuzz/make_seeds.py) must stay valid, or fuzz_llama2c would
// start from refusals only: byte 0 even, a checkpoint; odd, a uint16 vocab size and a tokenizer.bin.
TEST(Llama2c, FuzzSeedsAreValid) {
  auto seed = [](const std::string& name) { return readBytes(std::string(TSCOPE_SOURCE_DIR) + "/tests/fuzz/corpus/llama2c/" + name); };
  for (const auto& [name, shared] :
       {std::pair{"legacy-tiny", true}, std::pair{"legacy-unshared", false}, std::pair{"v1-tiny", false}, std::pair{"v2-q80", true}}) {
    const std::string bytes = seed(name).substr(1);
    std::vector<float> aligned(bytes.size() / 4 + 1);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    const Weights weights = llama2cCheckpointFromBytes(name, reinterpret_cast<const uint8_t*>(aligned.data()), bytes.size());
    EXPECT_EQ(weights.config().n_embd, 4) << name;
    EXPECT_EQ(weights.config().tie_word_embeddings, shared) << name;
  }
  const std::string tokenizer = seed("tokenizer-bin");
  ASSERT_EQ(tokenizer[0], '\x01');
  const auto spm = llama2cTokenizerFromBytes("seed", tokenizer.substr(3),
                                             static_cast<unsigned char>(tokenizer[1]) | static_cast<unsigned char>(tokenizer[2]) << 8);
  EXPECT_EQ(spm->encode("ab a"), (std::vector<int>{262, 261, 262}));  // " a" (-1) outscores "ab" (-2): " a" b " a"
}
