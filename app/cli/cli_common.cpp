// The helpers tscope-cli's commands share: prompt input, backend choice and JSON of tokens.
// A prompt longer than the context runs its last n_ctx tokens, as the app does.
#include "app/cli/cli_common.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "model/generate/fill_mask.h"
#include "model/core/file_check.h"
#include "model/tokenize/unicode_text.h"
#include "model/core/context_fit.h"
#include "model/core/error.h"
#include "model/core/softmax.h"
#include "model/generate/generate.h"
#include "model/select/backend_select.h"
#include "model/nn/trace_views.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace tscope::cli {
namespace {

// A prompt given as bytes in a file (any bytes: NUL and control characters cannot be in argv).
std::string readTextFile(const std::string& path) {
  requireRegularFile(path, "a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + std::strerror(errno) + ")");
  constexpr std::streamoff kMaxBytes = std::streamoff(256) << 20;
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (static_cast<std::streamoff>(text.size()) > kMaxBytes) throw Error(path + ": larger than 256 MiB; a prompt that long cannot run");
  }
  if (in.bad()) throw Error(path + ": read failed");
  return text;
}

}  // namespace

void print(const json& j) { std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n"; }

std::string commandLine(const std::string& command, const std::vector<std::string>& argv) {
  std::string text = "tscope-cli " + command;
  for (const std::string& arg : argv) text += arg.find_first_of(" \t'\"") == std::string::npos ? " " + arg : " '" + arg + "'";
  return text;
}

const Tokenizer& requireTokenizer(const LoadedModel& model) {
  if (!model.tokenizer) throw Error(model.path + ": no tokenizer found (" + model.tokenizerNote + "); use --ids instead of text");
  return *model.tokenizer;
}

std::string inputText(const Args& args, const std::string& textFlag) {
  if (args.has(textFlag + "-file")) return readTextFile(args.str(textFlag + "-file"));
  return args.str(textFlag);
}

namespace {

// The tokens of --TEXTFLAG, --TEXTFLAG-file or --IDSFLAG (at most one), checked and fitted to the
// context; `none` is what no flag gives (empty: an error). `prefix` goes before a text's tokens.
Input readInput(const Args& args, const LoadedModel& model, const std::string& textFlag, const std::string& idsFlag, const std::vector<int>& none,
                const std::vector<int>& prefix) {
  const int sources = args.has(textFlag) + args.has(textFlag + "-file") + args.has(idsFlag);
  if (sources > 1 || (sources == 0 && none.empty()))
    throw UsageError("give exactly one of --" + textFlag + ", --" + textFlag + "-file and --" + idsFlag);
  Input input;
  std::vector<int> ids = none;
  size_t pinned = 0;  // the prefix (an encoder-decoder's start token) stays when a long text is cut
  const int context = model.weights.config().n_positions, V = model.weights.config().vocab_size;
  if (args.has(idsFlag)) {
    ids = args.intList(idsFlag);
  } else if (sources == 1 && model.weights.config().masked_lm) {
    // A masked LM reads [CLS] text [SEP], each "[MASK]" the mask token, whole: what the app runs.
    const Tokenizer& tokenizer = requireTokenizer(model);
    const MaskedLmTokens specials = findMaskedLmTokens(tokenizer);
    if (std::string problem = fillProblem(model.weights.config(), specials); !problem.empty()) throw Error(model.path + ": " + problem);
    const MaskedText text = encodeMaskedText(tokenizer, specials, inputText(args, textFlag));
    if (std::string problem = contextProblem(text, context); !problem.empty()) throw Error(problem);
    ids = text.ids;
  } else if (sources == 1) {
    const Tokenizer& tokenizer = requireTokenizer(model);
    const std::vector<int> text = tokenizer.encode(inputText(args, textFlag));
    ids = prefix;
    pinned = prefix.size();
    ids.insert(ids.end(), text.begin(), text.end());
    input.characterLevel = tokenizer.kind() == TokenizerKind::Char;
  }
  if (ids.empty()) throw Error("the --" + textFlag + " input is empty (no tokens): give some text");
  for (int id : ids)
    if (id < 0 || id >= V) throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(V) + ")");
  if (input.characterLevel) {
    input.unknown = static_cast<size_t>(std::count(ids.begin() + static_cast<long>(prefix.size()), ids.end(), 0));
    if (input.unknown > 0)
      std::fprintf(stderr, "tscope-cli: %zu character%s of the input %s not in the model's vocabulary: run as <unk> (id 0)\n", input.unknown,
                   input.unknown == 1 ? "" : "s", input.unknown == 1 ? "is" : "are");
  }
  ContextFit fit = fitToContext(std::move(ids), context, static_cast<int>(pinned));
  input.dropped = fit.dropped.size();
  if (input.dropped > 0)  // the app keeps the same tokens (Session::fitPrompt)
    std::fprintf(stderr, "tscope-cli: the --%s input is %zu tokens but the model's context holds %d: running the last %d (%zu dropped%s)\n",
                 textFlag.c_str(), fit.kept.size() + input.dropped, context, context, input.dropped,
                 pinned ? ", after the decoder's start token, which stays first" : "");
  input.ids = std::move(fit.kept);
  return input;
}

}  // namespace

Input inputIds(const Args& args, const LoadedModel& model, const std::string& textFlag) {
  const ModelConfig& c = model.weights.config();
  if (c.isImage()) throw Error(model.path + " is an image model: it reads a picture, not text (tscope-cli classify --model M --image FILE)");
  if (!c.isEncoderDecoder()) return readInput(args, model, textFlag, "ids", {}, {});
  return readInput(args, model, textFlag, "ids", {c.decoder_start_token_id}, {c.decoder_start_token_id});
}

std::optional<Input> sourceIds(const Args& args, const LoadedModel& model) {
  if (!model.weights.config().isEncoderDecoder()) {
    for (const char* flag : kSourceFlags)
      if (args.has(flag)) throw UsageError(std::string("--") + flag + " is for encoder-decoder models; " + model.path + " is decoder-only");
    return std::nullopt;
  }
  return readInput(args, model, "source", "source-ids", {}, {});
}

void describeInput(json& out, const Input& input) {
  out["dropped_tokens"] = input.dropped;
  if (input.characterLevel) out["unknown_characters"] = input.unknown;
}

void requireUtf8Flags(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& value = argv[i];
    for (size_t pos = 0; pos < value.size();) {
      const unicode::Utf8Unit unit = unicode::decodeUtf8Unit(value, pos);
      if (!unit.valid) {
        const std::string flag = i > 0 && argv[i - 1].starts_with("--") ? argv[i - 1] : "an argument";
        throw UsageError(flag + " is not valid UTF-8 (byte " + std::to_string(pos) + "): it is kept in a JSON file, which holds UTF-8 only");
      }
      pos += unit.length;
    }
  }
}

void requireWritableOutput(const std::string& path, bool directory) {
  std::error_code ec;
  fs::path at(path);
  const fs::file_status status = fs::status(at, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw Error(path + ": cannot be written (" + ec.message() + ")");
  if (fs::exists(status)) {
    if (directory && !fs::is_directory(status)) throw Error(path + ": exists and is not a folder");
    if (!directory && !fs::is_regular_file(status)) throw Error(path + ": exists and is not a regular file");
  }
  // A file goes into an existing folder (written atomically there); a folder is made with the
  // folders above it, under the nearest one that exists. That folder must take new entries.
  fs::path folder = directory && fs::is_directory(status) ? at : at.parent_path();
  if (folder.empty()) folder = ".";
  if (directory)
    while (!fs::exists(folder, ec) && folder.has_parent_path() && folder != folder.parent_path()) folder = folder.parent_path();
  if (!fs::exists(folder, ec)) throw Error(path + ": the folder " + folder.string() + " does not exist");
  if (!fs::is_directory(folder, ec)) throw Error(path + ": " + folder.string() + " is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0) throw Error(path + ": cannot write in " + folder.string() + " (" + std::strerror(errno) + ")");
}

std::unique_ptr<Backend> chooseBackend(const Args& args, std::string* note) {
  const int threads = static_cast<int>(args.integer("threads", 0, 0, 1024));
  const std::string name = args.str("backend", "auto");
  if (name != "auto" && name != "cpu" && name != "reference" && name != "cuda")
    throw UsageError("--backend must be auto, cpu, reference or cuda, got '" + oneLine(name, 64) + "'");
  auto backend = makeBackend(name, threads, note);
  if (name == "auto" && backend->name() != "cuda" && !note->empty()) std::fprintf(stderr, "tscope-cli: running on the %s\n", note->c_str());
  return backend;
}

std::unique_ptr<Device> chooseTrainingDevice(const std::string& name, std::string* note) {
  if (name != "cpu" && name != "cuda" && name != "auto") throw UsageError("--backend must be cpu, cuda or auto, got '" + name + "'");
  return makeTrainingDevice(name, note);
}

void describeBackend(json& out, const Backend& backend, const std::string& note) {
  out["backend"] = backend.name();
  if (!note.empty()) out["backend_note"] = note;
}

std::string tokenString(const LoadedModel& model, int id) {
  return model.tokenizer && id < model.tokenizer->vocabSize() ? model.tokenizer->tokenText(id) : "";
}

json topTokens(const LoadedModel& model, const float* logits, int V, int count) {
  const SoftmaxNorm norm = softmaxNorm(std::span<const float>(logits, V));
  json out = json::array();
  for (const int id : topTokenIds(std::vector<float>(logits, logits + V), count))
    out.push_back({{"id", id}, {"token", tokenString(model, id)}, {"prob", norm.probability(logits[id])}, {"logit", logits[id]}});
  return out;
}

json tokensJson(const LoadedModel& model, const std::vector<int>& ids) {
  json out = json::array();
  for (int id : ids) out.push_back(tokenString(model, id));
  return out;
}

}  // namespace tscope::cli
