// The training presets (see train_presets.h) and the checks the Training panel runs on every edit.
// Sizes were chosen by timing: each task preset runs in well under two minutes on two cores.
#include "model/tokenize/special_tokens.h"
#include "model/train/train_presets.h"

#include <algorithm>

#include "model/core/error.h"
#include "model/train/seq2seq_dates.h"

namespace tscope {

namespace {

// The shared shape of the task presets: a small pre-norm GPT with learned positions.
TrainConfig taskRun(int layers, int heads, int embd, int steps, float lr) {
  TrainConfig c;
  c.model.n_layer = layers;
  c.model.n_head = heads;
  c.model.n_embd = embd;
  c.batch = 32;
  c.maxSteps = steps;
  c.maxLr = lr;
  c.minLr = lr / 10;
  c.warmupSteps = std::min(50, steps / 10);
  c.adam.weightDecay = 0.1f;
  c.evalEvery = std::max(1, steps / 30);
  c.evalBatches = 4;
  c.checkpointEvery = 0;
  return c;
}

DataSpec task(SyntheticTask kind, int vocab, int length) {
  DataSpec d;
  d.brown = false;
  d.task.task = kind;
  d.task.vocab = vocab;
  d.task.length = length;
  return d;
}

TrainConfig brownRun() {
  TrainConfig c;
  c.model.n_layer = 2;
  c.model.n_head = 4;
  c.model.n_embd = 64;
  c.batch = 16;
  c.seqLen = 64;
  c.maxSteps = 1500;
  c.maxLr = 3e-3f;
  c.minLr = 3e-4f;
  c.warmupSteps = 50;
  c.evalEvery = 50;
  c.evalBatches = 4;
  c.checkpointEvery = 0;
  return c;
}

DataSpec brown(int vocab) {
  DataSpec d;
  d.brown = true;
  d.bpeVocab = vocab;
  return d;
}

// The lecture's "residual connections and normalisation dramatically improve trainability", as four
// runs of one 8-layer model on Brown that differ only in the norm's place, or its absence, or the
// residual's (assets/comparisons/trainability.json). Deep on purpose: two layers train without either.
void addTrainabilityPresets(std::vector<TrainPreset>& presets) {
  auto deep = [&](const char* key, const char* name, const char* description, auto edit) {
    TrainConfig c = brownRun();
    c.model.n_layer = 8;
    edit(c.model);
    presets.push_back({key, name, description, c, brown(1024)});
  };
  deep("brown-deep", "Brown corpus, 8 layers, pre-norm (the baseline)",
       "An 8-layer model on Brown with the usual pre-norm block, z = x + f(LayerNorm(x)): the baseline of the trainability "
       "comparison.",
       [](ModelConfig&) {});
  deep("brown-deep-postnorm", "Brown corpus, 8 layers, post-norm",
       "The same 8 layers with the original Transformer's post-norm block, z = LayerNorm(x + f(x)): the norm sits on the "
       "residual stream itself, so the gradient passes through 16 norms on its way down.",
       [](ModelConfig& m) { m.pre_norm = false; });
  deep("brown-deep-nonorm", "Brown corpus, 8 layers, no norm",
       "The same 8 layers with no normalisation at all, z = x + f(x): nothing keeps the residual stream's scale in check.",
       [](ModelConfig& m) { m.norm = NormKind::None; });
  deep("brown-deep-noresidual", "Brown corpus, 8 layers, no residual",
       "The same 8 layers without residual connections, z = f(LayerNorm(x)): every layer must pass on everything the "
       "next one needs, and the gradient reaches layer 0 only through all the others.",
       [](ModelConfig& m) { m.residual = false; });
}

// The Switch Transformer's "more experts at the same compute": "brown" (dense, F = 4C) against 2, 4
// and 8 experts of the same width with top-1 routing, so every token runs one F = 4C feed-forward as
// in the dense model (plus a C x E router), on the same tokens (assets/comparisons/switch-experts.json).
// Switch Transformers: Fedus, Zoph and Shazeer, 2021 (arXiv:2101.03961), section 2.1 and 2.2.
void addSwitchPresets(std::vector<TrainPreset>& presets) {
  for (int experts : {2, 4, 8}) {
    TrainConfig c = brownRun();
    c.model.n_experts = experts;
    c.model.moe_top_k = 1;
    // Switch's gate is the router's full softmax probability of the chosen expert, y = p_i(x) E_i(x)
    // (renormalised over one expert it would be 1, and the router would learn from the balancing
    // loss alone); its load-balancing coefficient is 0.01. No capacity limit: tscope's capacity is
    // per 64-token sequence, far stricter than Switch's per batch on a core, and at Switch's 1.25
    // the 8-expert run dropped enough tokens to end at 4.77 (assets/comparisons/README.md).
    c.model.moe_normalize_top_k = false;
    c.model.moe_capacity_factor = 0;
    c.model.moe_aux_loss_alpha = 0.01;
    const std::string n = std::to_string(experts);
    presets.push_back({"brown-switch" + n, "Brown corpus, Switch MoE (" + n + " experts, top-1)",
                       "The tiny Brown model with " + n +
                           " feed-forward experts per layer, each as wide as the dense model's, and "
                           "each token routed to one (Switch Transformer): the same compute per token as \"brown\", " +
                           n + " times its feed-forward parameters.",
                       c, brown(1024)});
  }
}

std::vector<TrainPreset> makePresets() {
  std::vector<TrainPreset> presets;
  {
    // ALiBi on purpose: with learned or rotary positions one layer-0 head solves the task by
    // looking a fixed 11 positions back; ALiBi's distance penalty leaves only the two-layer
    // induction circuit (a plateau, then the loss drops as it forms).
    TrainConfig c = taskRun(2, 8, 128, 2000, 1e-3f);
    c.model.attention_only = true;
    c.model.position_encoding = PositionEncoding::Alibi;
    presets.push_back({"induction", "Induction heads (2-layer attention-only)",
                       "A random sequence is shown twice: after a plateau the loss drops as a layer-0 head learns to attend to the previous "
                       "token and a layer-1 induction head uses it to attend to the token that followed the current one last time (a "
                       "stripe 11 below the diagonal). ALiBi positions rule out the shortcut of looking a fixed distance back.",
                       c, task(SyntheticTask::Induction, 26, 12)});
  }
  presets.push_back({"copy", "Copy",
                     "After the separator the model writes the input again: watch a head attend from each output position to the "
                     "input position one sequence-length back.",
                     taskRun(2, 2, 64, 400, 1e-3f), task(SyntheticTask::Copy, 26, 12)});
  presets.push_back({"reverse", "Reverse",
                     "After the separator the model writes the input backwards: its attention forms an anti-diagonal, the first "
                     "output looking at the last input.",
                     taskRun(2, 2, 64, 400, 1e-3f), task(SyntheticTask::Reverse, 26, 12)});
  presets.push_back({"sort", "Sort",
                     "After the separator the model writes the input in ascending order, so each output must find the smallest "
                     "symbol not yet written: harder than copying, and it needs the feed-forward layers.",
                     taskRun(2, 4, 64, 1200, 1e-3f), task(SyntheticTask::Sort, 16, 10)});
  {
    TrainConfig c = taskRun(1, 4, 128, 1500, 1e-3f);
    c.adam.weightDecay = 1.0f;
    DataSpec d;
    d.brown = false;
    d.task.task = SyntheticTask::ModularAddition;
    d.task.modulus = 23;
    presets.push_back({"modadd", "Modular addition (mod 23)",
                       "The model learns a + b = (a + b) mod 23 with strong weight decay, the set-up of the grokking experiments; "
                       "here every batch draws fresh pairs, so train and validation loss fall together.",
                       c, d});
  }
  {
    DataSpec d;
    d.brown = false;
    d.task.task = SyntheticTask::Addition;
    d.task.digits = 3;
    presets.push_back({"addition", "Addition (3 digits, answer reversed)",
                       "The model learns 123+456=9750: the sum written least significant digit first, so each digit needs only "
                       "the two digits above it and the carry it just wrote. Watch the loss fall in steps as it learns the digits "
                       "without a carry, then the carries.",
                       taskRun(2, 4, 64, 2000, 3e-3f), d});
  }
  {
    // An encoder-decoder (docs/ENCODER_DECODER.md) on the dates translation task.
    TrainConfig c = taskRun(2, 4, 64, 1200, 2e-3f);
    c.model.n_encoder_layer = 2;
    c.model.decoder_start_token_id = kDateDecoderStartId;
    c.model.eos_token_id = kDateEndId;
    c.adam.weightDecay = 0.01f;
    DataSpec d;
    d.brown = false;
    d.dates = true;
    presets.push_back({"dates", "Translation: spelled-out dates to ISO (encoder-decoder)",
                       "An encoder reads \"the twelfth of march nineteen ninety one\" and a decoder writes 1991-03-12 through "
                       "cross-attention: watch the loss fall as the decoder learns to look at the year words first, then the month, "
                       "then the day (open the Translation tab on the saved model to see the alignment).",
                       c, d});
  }
  {
    // A Vision Transformer (docs/VISION.md) on the 8x8 handwritten digits: 2x2 patches, 16 patch tokens + [CLS].
    TrainConfig c = taskRun(4, 4, 64, 3000, 3e-3f);  // assets/models/configs/digits-vit.json's run
    c.batch = 64;
    c.model.causal = false;
    c.model.tie_word_embeddings = false;
    c.model.image_size = 8;
    c.model.patch_size = 2;
    c.model.num_channels = 1;
    c.model.d_ff = 128;
    c.model.tokenizer = "labels";
    c.evalBatches = 6;  // 6 x 64 covers the 360 test images
    DataSpec d;
    d.brown = false;
    d.digits = true;
    presets.push_back({"digits-vit", "Vision Transformer: handwritten digits (8x8, 2x2 patches)",
                       "Each 8x8 digit is cut into 16 patches of 2x2 pixels, each patch a token after a [CLS] token; the class is read "
                       "from [CLS]. Watch the test accuracy climb past a logistic regression's and the attention of [CLS] settle on "
                       "the strokes that tell the digits apart.",
                       c, d});
  }
  presets.push_back({"brown", "Brown corpus, tiny dense",
                     "A 2-layer model learns English from the Brown corpus with a 1024-token BPE: the loss falls quickly as it learns "
                     "frequent words, then slowly as it learns which words follow which.",
                     brownRun(), brown(1024)});
  {
    TrainConfig c = brownRun();
    c.model.n_experts = 8;
    c.model.moe_top_k = 2;
    c.model.d_ff = 128;
    presets.push_back({"brown-moe", "Brown corpus, tiny MoE (8 experts, top-2)",
                       "The same model with 8 small experts per layer, each token routed to 2: watch the router spread tokens "
                       "over the experts as the load-balancing loss pushes towards an even load.",
                       c, brown(1024)});
  }
  {
    TrainConfig c = brownRun();
    c.model.causal = false;
    c.model.masked_lm = true;
    c.model.position_encoding = PositionEncoding::Rope;  // learns "the word beside me" as one offset (assets/models/README.md)
    presets.push_back({"brown-bert", "Brown corpus, tiny BERT (masked LM)",
                       "The same model with no causal mask, trained as BERT is: 15% of the tokens hidden and predicted from both "
                       "sides. The loss counts only the hidden ones; the masked-token accuracy beside it says how many it gets right.",
                       c, brown(1024)});
  }
  // The lecture's efficient-attention answers trained on the same data as "brown" (exact attention):
  // each query sees 16 of the 64 tokens' worth of keys (a window of 16, or 16 pooled segments).
  auto brownAttention = [&](const char* key, const char* name, AttentionVariantParams variant, const char* description) {
    TrainConfig c = brownRun();
    c.model.attention_variant = variant;
    presets.push_back({key, name, description, c, brown(1024)});
  };
  AttentionVariantParams linformer;
  linformer.variant = AttentionVariant::Linformer;
  linformer.projected = 16;
  brownAttention("brown-linformer", "Brown corpus, Linformer attention (k = 16)", linformer,
                 "The tiny Brown model with Linformer's attention: keys and values are averaged over 16 segments of 4 tokens "
                 "(causal: the part of each segment already seen), so a query attends to 16 summaries instead of 64 tokens. "
                 "Compare its validation loss with the exact run.");
  AttentionVariantParams linear;
  linear.variant = AttentionVariant::Linear;
  brownAttention("brown-linear", "Brown corpus, linear attention (elu + 1)", linear,
                 "The tiny Brown model with linear attention, phi(q) (sum phi(k) v^T) without the softmax: memory and time "
                 "linear in the length, but no sharp focus on one token. Compare its validation loss with the exact run.");
  AttentionVariantParams window;
  window.variant = AttentionVariant::Window;
  window.window = 16;
  brownAttention("brown-window", "Brown corpus, sliding-window attention (w = 16)", window,
                 "The tiny Brown model where each token sees only the 16 tokens up to it: exact softmax inside the window. Most "
                 "of what predicts the next English word is nearby, so watch how little it loses.");
  addTrainabilityPresets(presets);
  addSwitchPresets(presets);
  return presets;
}

}  // namespace

const std::vector<TrainPreset>& trainPresets() {
  static const std::vector<TrainPreset> presets = makePresets();
  return presets;
}

const TrainPreset* findTrainPreset(const std::string& keyOrName) {
  for (const TrainPreset& p : trainPresets())
    if (p.key == keyOrName || p.name == keyOrName) return &p;
  return nullptr;
}

ModelConfig resolvedModelConfig(const TrainConfig& config, const DataSpec& data) {
  ModelConfig m = config.model;
  if (data.brown) {
    // A masked LM's [PAD] [CLS] [SEP] [MASK] follow the BPE (text_source.h).
    m.vocab_size = data.bpeVocab + (config.model.masked_lm ? static_cast<int>(kMaskedLmTokenNames.size()) : 0);
    m.n_positions = config.seqLen;
    m.tokenizer = "gpt2-bpe";
  } else if (data.digits) {  // as DigitsSource and the Trainer set them
    m.vocab_size = 10;
    m.n_positions = 1 + m.numPatches();
    m.tokenizer = "labels";
  } else if (data.dates) {  // as DatesSource and the Trainer set them
    m.vocab_size = kDateVocabSize;
    m.n_positions = std::max(kDateTargetLength + 1, kDateMaxSourceLength);
    m.tokenizer = "char";
    m.decoder_start_token_id = kDateDecoderStartId;
    m.eos_token_id = kDateEndId;
  } else {
    m.vocab_size = taskVocabSize(data.task) + 1;  // id 0 is the character tokenizer's "<unk>"
    m.n_positions = taskSequenceLength(data.task) - 1;
    m.tokenizer = "char";
  }
  return m;
}

std::string validateTrainSetup(const TrainConfig& config, const DataSpec& data) {
  try {
    validate(config);
  } catch (const Error& e) {
    return e.what();
  }
  if (data.textPath.find(',') != std::string::npos) return "data: the text path must not contain ','";
  if (data.brown) {
    if (data.bpeVocab < 257 || data.bpeVocab > 65536) return "data: the BPE vocabulary must be between 257 and 65536";
    if (!(data.validationFraction > 0 && data.validationFraction < 0.5)) return "data: the validation fraction must be in (0, 0.5)";
  } else if (std::string msg = data.dates || data.digits ? "" : validateTaskSpec(data.task); !msg.empty()) {
    return "data: " + msg;
  }
  if (config.model.masked_lm && !data.brown) return "model config: a masked language model (masked_lm) trains on text: data brown or a text file";
  if (data.dates != config.model.isEncoderDecoder())
    return data.dates ? "model config: the dates task trains encoder-decoder models: set n_encoder_layer above 0"
                      : "model config: an encoder-decoder model (n_encoder_layer > 0) trains on the dates task";
  if (data.digits != config.model.isImage())
    return data.digits ? "model config: the digits are images: set image_size 8, patch_size and num_channels 1"
                       : "model config: an image model (image_size > 0) trains on the digits";
  if (std::string msg = validateConfig(resolvedModelConfig(config, data)); !msg.empty()) return "model config: " + msg;
  return "";
}

}  // namespace tscope
