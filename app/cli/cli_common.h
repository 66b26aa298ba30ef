// What every tscope-cli command that runs a prompt shares: reading the prompt (text, a file of
// bytes or ids) and fitting it to the context, choosing the backend, and writing tokens and top
// predictions as JSON. Errors are tscope::Error (bad input) or UsageError (bad flags).
#pragma once
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/common/args.h"
#include "model/io/model_io.h"
#include "model/nn/backend.h"
#include "model/train/device.h"

namespace tscope::cli {

void print(const nlohmann::json& j);  // JSON on stdout
// "tscope-cli COMMAND ARGS..." as typed (arguments with spaces or quotes quoted), kept in result files.
std::string commandLine(const std::string& command, const std::vector<std::string>& argv);

// Commands that keep their flags in JSON result files (train, compare, sweep): every value valid
// UTF-8, checked before any work (a JSON file cannot hold other bytes). Throws UsageError naming the flag.
void requireUtf8Flags(const std::vector<std::string>& argv);
// What a command will write (`path`: a file, or with `directory` a folder it may create), checked
// before any work: an existing path of the right kind, else a writable folder above it. Throws
// tscope::Error in one line naming the path.
void requireWritableOutput(const std::string& path, bool directory);

const Tokenizer& requireTokenizer(const LoadedModel& model);

// The text of a prompt: --NAME S or --NAME-file PATH (any bytes: NUL and control characters
// cannot be in argv).
std::string inputText(const Args& args, const std::string& textFlag);

// What a command runs: the last n_ctx tokens of the input, and what it says about the rest.
struct Input {
  std::vector<int> ids;  // (T <= n_ctx) the tokens that run
  size_t dropped = 0;    // tokens before them (a too-long input), not run
  size_t unknown = 0;    // characters a character-level model does not know, run as <unk> (id 0)
  bool characterLevel = false;
};

// Tokens from --TEXTFLAG, --TEXTFLAG-file or --ids. An input with no tokens is an error; a longer
// one than the context runs its last n_ctx tokens (fitToContext, as the app does) with a note on
// stderr; unknown characters of a character-level model are counted and noted. For an
// encoder-decoder model this is the decoder's input: its text follows decoder_start_token_id, and
// with none of the flags it is that token alone (ids are taken as given).
Input inputIds(const Args& args, const LoadedModel& model, const std::string& textFlag);

// Encoder-decoder models: the source from --source, --source-file or --source-ids (required),
// checked and fitted to the context as inputIds does (read it before making the backend, so a bad
// source is the only line). Decoder-only models: nullopt, and the source flags are a usage error.
std::optional<Input> sourceIds(const Args& args, const LoadedModel& model);
// The flags encodeSource reads.
inline const char* const kSourceFlags[] = {"source", "source-file", "source-ids"};

// What every command that runs a prompt reports about it.
void describeInput(nlohmann::json& out, const Input& input);

// --backend cpu|reference|cuda|auto (default auto: the GPU when there is a usable one, else the
// CPU, and then one line on stderr says so and why). An unknown or unavailable backend is a
// tscope::Error: one line, exit 1. `note` says what "auto" chose and why.
std::unique_ptr<Backend> chooseBackend(const Args& args, std::string* note);

// --backend cpu|cuda|auto for training (default auto: the GPU when there is a usable one, else the
// CPU with a one-line note): makeTrainingDevice's device, null for the CPU (the Trainer's own, from
// its run's thread count, so a CPU run stays bit-reproducible). A run may resume on another backend
// than the one that saved it: it continues correctly but not bit for bit (the device sums in other orders).
std::unique_ptr<Device> chooseTrainingDevice(const std::string& name, std::string* note);

// Adds "backend" and, when there is one, "backend_note" to a command's output.
void describeBackend(nlohmann::json& out, const Backend& backend, const std::string& note);

std::string tokenString(const LoadedModel& model, int id);  // "" without a tokenizer
// [{id, token, prob, logit}] of the `count` largest of logits (V).
nlohmann::json topTokens(const LoadedModel& model, const float* logits, int V, int count);
nlohmann::json tokensJson(const LoadedModel& model, const std::vector<int>& ids);

}  // namespace tscope::cli
