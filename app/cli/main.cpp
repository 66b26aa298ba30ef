// tscope-cli: the engine from the command line. JSON on stdout; on any error one line on stderr
// and a non-zero exit (1 bad input, 2 bad usage). The output format is a contract (see README).
#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <map>

#include "app/common/args.h"
#include "app/cli/commands.h"
#include "model/core/error.h"

namespace {

const char* kUsage =
    "usage: tscope-cli COMMAND [flags]\n"
    "  info       --model M [--context N] [--backend B]\n"
    "  tokenize   --model M (--text S | --text-file PATH)\n"
    "  detokenize --model M --ids 1,2,3\n"
    "  forward    --model M (--text S | --text-file PATH | --ids 1,2,3) [--dump DIR] [--top N] [--loss-from N] [ABLATE]\n"
    "             [--backend B] [--threads N] [--attention-variant NAME [KNOBS] (with --dump: its maps per layer)]\n"
    "             [--what-if W,W] the model with pieces taken out: no-causal-mask, no-positions, no-scale,\n"
    "             uniform-attention:L, skip-residual:L, skip-mlp:L, skip-final-norm, shuffle:SEED (the ids reordered)\n"
    "             encoder-decoder models: also --source S | --source-file PATH | --source-ids 1,2,3 (the text follows the\n"
    "             decoder start token; --dump adds enc_attn_L.npy (H, S, S) and cross_L.npy (H, T, S))\n"
    "  generate   --model M (--prompt S | --prompt-file PATH | --ids 1,2,3) --max-new N\n"
    "             [--temperature X --top-k K --top-p P --seed S | --greedy | --beam B] [ABLATE] [--backend B] [--threads N]\n"
    "             encoder-decoder models: --source S | --source-file PATH | --source-ids 1,2,3 (the prompt may be left out)\n"
    "  fill       --model M (--text S | --text-file PATH) [--top K (default 10)] [--backend B] [--threads N]\n"
    "             a masked language model (brown-bert, BERT) fills each [MASK] of the text: its top K with probabilities\n"
    "  fill-eval  --model M [--causal C] [--windows N (default 1000)] [--seed S] [--backend B]\n"
    "             a masked LM's top-1 accuracy on hidden tokens of Brown's held-out documents, beside the most frequent\n"
    "             token and a causal model C (e.g. brown-small) predicting the same tokens from the words on their left\n"
    "  families   [--models DIR (default assets/models)] [--top K (default 3)]\n"
    "             the lecture's three families live: brown-small (GPT), brown-bert (BERT) and dates-encdec (T5), each on its\n"
    "             example input, with its output, attention mask and training objective (the Architecture panel's view)\n"
    "  classify   --model M (--image FILE | --digit N) [--top K (default 5)] [--mask 5,6] [--dump DIR] [--backend B] | --model M --test-set\n"
    "             an image model (digits-vit, a ViT checkpoint): {\"top\": [{\"label\", \"id\", \"p\"}...]}; any image size is resized\n"
    "             as the model's preprocessor_config.json says; --digit N is test image N of the digits' fixed split; --dump adds\n"
    "             pixels.npy, rollout.npy (T, T), position_similarity.npy (P, P) and patch_filters.npy beside forward's arrays;\n"
    "             --test-set: the digits model's test accuracy and a logistic regression's on the same split\n"
    "  init       --out DIR [--config config.json] [--layers L --heads H --embd C --positions P --seed S --init-std X] [--tokenizer DIR]\n"
    "  train      --config FILE --data SPEC --out DIR [--steps N] [--threads N] [--quiet] [--backend B] | --out DIR --resume\n"
    "             SPEC: brown[:vocab=N,val=F] | text:path=FILE[,vocab=N,val=F] | addition[:digits=N]\n"
    "                   | copy|reverse|sort|induction[:vocab=N,length=N] | modadd[:modulus=N] | dates (encoder-decoder)\n"
    "                   | digits (an image model: the 8x8 handwritten digits)\n"
    "  compare-forward --left M1 --right M2 (--text S | --left-text S --right-text S) [--left-what-if W] [--right-what-if W]\n"
    "             [--dump DIR] [--backend B]: two forwards side by side: \"kl\" of the next token, each side's top 5, logit lens\n"
    "             and per-head entropy / previous- and first-token distances, per layer and head the largest map difference\n"
    "  compare    --presets P1,P2,... --out FILE [--steps N] [--threads N] [--title T] [--description D]\n"
    "             trains each preset in turn and writes a training comparison (the Training panel's Compare view)\n"
    "  attention-bench --n 256,1024,4096 [--variants exact,flash,window,lsh,linformer,linear,performer] [--d 64] [--heads 1]\n"
    "             [--repeats 3] [--seed S] [--causal | --no-causal] [KNOBS]\n"
    "             [--max-bytes B (exact is skipped above it; default 2 GiB)] [--fit]\n"
    "  published  [--price DOLLARS_PER_GPU_HOUR (1.50)] [--gpu-tflops SUSTAINED (28)]\n"
    "             the slides' published tables beside tscope's numbers: Attention Is All You Need's Table 2, Switch-C,\n"
    "             the named runs' training cost (6ND, GPU-hours, dollars), the Chinchilla worked example at C = 1e23,\n"
    "             the slide's GPT-3 specifications beside Brown et al.'s Table 2.1 (the slide's Large is the paper's XL)\n"
    "  lesson     FILE_OR_NAME [--assets DIR] [--backend B]\n"
    "             runs every step's check on the live model (NAME: DIR/lessons/NAME.json; DIR default: the source tree's assets);\n"
    "             exit 1 when the model disagrees with an answer\n"
    "  sweep      --out DIR [--preset brown|tiny|addition | --spec FILE] [--sizes L2-d64[-h4],...] [--tokens 250K,1M,...]\n"
    "             [--threads N] [--quiet] [--bootstrap N] [--seed S] [--csv DIR]\n"
    "             trains a scaling sweep's unfinished runs (a new DIR from the preset, default brown; an existing DIR\n"
    "             continues, --sizes / --tokens extend it); prints the runs and the fitted laws; Ctrl-C checkpoints (exit 130)\n"
    "  fit        --runs DIR|sweep.json [--bootstrap N (default 200)] [--seed S] [--csv DIR]\n"
    "             fits Kaplan's L(N), L(D) and Chinchilla's L(N, D) to a sweep's finished runs\n"
    "  score-dates --model M [--examples N (default 500)] [--seed S]\n"
    "             a dates encoder-decoder on held-out dates: exact match, and the share of characters whose\n"
    "             strongest cross-attention falls on the words they come from, per decoder layer\n"
    "KNOBS are --tile --window --buckets --rounds --chunk --projected --features N, --projection pool|gaussian.\n"
    "ABLATE is --ablate L.H[,L.H|L.mlp...] [--ablate-mode zero|mean|patch] [--patch-source S (patch only)].\n"
    "B is auto (default: cuda when a CUDA device is usable, else cpu, saying why on stderr and in backend_note),\n"
    "  cpu, reference or cuda.\n"
    "A prompt longer than the context runs its last n_ctx tokens (a note on stderr; dropped_tokens in the JSON);\n"
    "  prompt and new tokens share the context: generate stops when they fill it (stop: context_full).\n"
    "M is a model directory (config.json + model.safetensors + tokenizer) or an llm.c .bin file.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace tscope::cli;
  using tscope::UsageError;
  const std::map<std::string, std::function<int(const Argv&)>> commands = {{"info", runInfo},
                                                                           {"tokenize", runTokenize},
                                                                           {"detokenize", runDetokenize},
                                                                           {"forward", runForward},
                                                                           {"generate", runGenerate},
                                                                           {"init", runInit},
                                                                           {"train", runTrain},
                                                                           {"compare", runCompare},
                                                                           {"compare-forward", runCompareForward},
                                                                           {"attention-bench", runAttentionBench},
                                                                           {"lesson", runLesson},
                                                                           {"sweep", runSweep},
                                                                           {"fit", runFit},
                                                                           {"score-dates", runScoreDates},
                                                                           {"fill", runFill},
                                                                           {"fill-eval", runFillEval},
                                                                           {"families", runFamilies},
                                                                           {"classify", runClassify},
                                                                           {"published", runPublished}};
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  auto it = commands.find(command);
  if (it == commands.end()) {
    std::cerr << "tscope-cli: unknown command '" << tscope::oneLine(command) << "' (try --help)\n";
    return 2;
  }
  try {
    return it->second(Argv(argv + 2, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "tscope-cli " << command << ": " << tscope::oneLine(e.what()) << "\n";
    return 2;
  } catch (const tscope::Error& e) {
    std::cerr << "tscope-cli " << command << ": " << tscope::oneLine(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "tscope-cli " << command << ": out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tscope-cli " << command << ": internal error: " << tscope::oneLine(e.what()) << "\n";
    return 3;
  }
}
