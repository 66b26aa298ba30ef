// The published tables and worked examples the lectures' slides lean on, as data and pure
// functions, each beside what tscope computes: Vaswani et al.'s Table 2 (BLEU and training cost),
// the cost of training named runs in GPU-hours and dollars from 6ND, the image-as-tokens counts
// of ViT, the Advanced Transformers slide "Worked Example: Compute-Optimal Model" at C = 1e23, and
// the slide "Appendix A1: GPT-3 Complete Specifications" beside Brown et al.'s Table 2.1.
#pragma once
#include <string>
#include <vector>

#include "model/core/config.h"
#include "model/theory/scaling.h"

namespace tscope {

// ---------------------------------------------------------------------------------------------
// Vaswani et al. 2017, "Attention Is All You Need" (arXiv 1706.03762), Table 2: newstest2014 BLEU
// and training cost in FLOPs. A blank cell of the paper is NaN. The paper's cost is training time
// x number of GPUs x an estimate of the GPUs' sustained single-precision FLOP/s (section 6.1), not
// counted operations.
struct TranslationRow {
  std::string model;
  double bleuEnDe, bleuEnFr;    // NaN = not reported
  double flopsEnDe, flopsEnFr;  // NaN = not reported
  int preset = -1;              // index into transformer2017Presets() (-1: not a Transformer)
  double steps = 0;             // training steps (section 5.4: base 100k, big 300k)
  double gpuHours = 0;          // P100-hours (section 5.2: 8 GPUs, base 12 hours, big 3.5 days)
};
// The P100's sustained single-precision FLOP/s the paper assumes (Table 2's footnote: 9.5 TFLOPS).
inline constexpr double kP100SustainedFlops = 9.5e12;
const std::vector<TranslationRow>& vaswaniTable2();
// Tokens a Transformer row trained on, EN-DE: steps x ~25,000 target tokens per batch (section 5.1).
double vaswaniTrainingTokens(const TranslationRow& row);

// ---------------------------------------------------------------------------------------------
// Training cost from C = 6ND. Defaults: Lambda Labs' 2020 estimate of GPT-3's cost ("OpenAI's
// GPT-3 Language Model: A Technical Overview", Chuan Li, June 2020): a V100 sustaining 28 TFLOP/s
// and $1.50 per V100-hour, which turn GPT-3's 3.14e23 FLOP into 355 GPU-years and $4.6M, the
// slide's figure.
struct GpuPricing {
  double dollarsPerGpuHour = 1.50;
  double sustainedFlopsPerGpu = 28e12;
};
struct TrainingCost {
  double flops = 0;     // 6 N D
  double gpuHours = 0;  // flops / sustained FLOP/s / 3600
  double dollars = 0;   // gpuHours x price
};
// Throws tscope::Error unless every argument is positive and finite.
TrainingCost trainingCost(double params, double tokens, const GpuPricing& pricing);

struct CostedRun {
  NamedRun run;
  double slideDollars = 0;       // the slide's "The Cost of Scale" figure (0 = not on the slide)
  double publishedGpuHours = 0;  // what the paper reports (0 = none)
  std::string tokensSource;      // where D comes from
};
// GPT-1, GPT-2, GPT-3, Chinchilla and LLaMA-2 70B, in that order.
const std::vector<CostedRun>& costedRuns();
NamedRun llama2Run();  // Touvron et al. 2023: 70B parameters, 2T tokens (6ND = 8.4e23 FLOP)

// ---------------------------------------------------------------------------------------------
// Images as tokens (Dosovitskiy et al. 2021, ViT): (side / patch)^2 tokens. 224 at 16: 196;
// 224 at 1 (every pixel a token): 50,176, the lecture's "50k sequence length, too much!".
int imagePatchTokens(int side, int patch);

// ---------------------------------------------------------------------------------------------
// Attention-mechanism FLOPs per token (QK^T and the weighted V) in the two conventions: tscope's
// (Kaplan et al. 2020, Table 1): 2 L n d_attn, one multiply-add per entry counted as 2 over both
// matmuls together; the lecture's: 2 x 2 n d per layer (2 FLOPs per multiply-add, for each of the
// two matmuls), twice tscope's.
double attentionFlopsKaplan(const ModelConfig& config, int contextLength);
double attentionFlopsLecture(const ModelConfig& config, int contextLength);

// ---------------------------------------------------------------------------------------------
// The slide "Worked Example: Compute-Optimal Model": C = 1e23, "N_opt ~ 0.73 x C^0.37",
// "D_opt ~ 1.45 x C^0.37", "= 0.73 x 1.86e8 ~ 136M", "~ 270M tokens", "D/N ~ 2".
struct SlideChinchillaExample {
  double flops = 1e23;
  double slidePower = 1.86e8;  // what the slide writes for (1e23)^0.37
  double slideParams = 136e6, slideTokens = 270e6;
  double power = 0;                    // (1e23)^0.37 computed: 3.24e8
  double paramsFromFormula = 0;        // 0.73 x C^0.37
  double tokensFromFormula = 0;        // 1.45 x C^0.37
  double slideBudget = 0;              // 6 x 136M x 270M: the compute the slide's answer spends
  ComputeOptimum hoffmann, besiroglu;  // tscope at C = 1e23
  std::string whereItGoesWrong;        // one line
};
SlideChinchillaExample slideChinchillaExample();

// ---------------------------------------------------------------------------------------------
// Brown et al. 2020, "Language Models are Few-Shot Learners" (arXiv 2005.14165), Table 2.1: the
// eight GPT-3 models' n_params, n_layers, d_model, n_heads, d_head, batch size (tokens) and
// learning rate; section 2.1: every model has n_ctx = 2048.
struct Gpt3PaperModel {
  std::string name;  // as Table 2.1 names it: "GPT-3 Small" ... "GPT-3 175B"
  double params;
  int layers, dModel, heads, dHead, context;
  double batchTokens, learningRate;
};
const std::vector<Gpt3PaperModel>& gpt3Table21();

// The slide "Appendix A1: GPT-3 Complete Specifications" (columns Small, Medium, Large, 175B) as
// it prints it, each cell beside Table 2.1's value for the model the slide means: its "Large
// 1.3B" is the paper's GPT-3 XL (the paper's Large has 760M parameters). The LAMBADA and
// HellaSwag rows were not checked against the paper's text (paper = NaN, checked = false).
struct Gpt3SpecCell {
  std::string slide;  // the slide's text
  double slideValue;  // the slide's number
  double paper = 0;   // Table 2.1's value for the model the slide means (NaN: not checked)
  bool checked = false;
  bool differs = false;  // checked and not equal
  std::string note;      // which paper models have the slide's value, or what the paper's Large has
};
struct Gpt3SpecRow {
  std::string label;                // the slide's row name
  std::vector<Gpt3SpecCell> cells;  // one per slide column
};
struct Gpt3SpecColumn {
  std::string slide;  // "Small", "Medium", "Large", "175B"
  int paperModel;     // index into gpt3Table21()
};
const std::vector<Gpt3SpecColumn>& gpt3SlideColumns();
// A Table 2.1 value as the paper prints it: 1.3B, 350M, 2.0e-4, 24.
std::string paperText(double v);
std::vector<Gpt3SpecRow> gpt3SlideSpecs();

}  // namespace tscope
