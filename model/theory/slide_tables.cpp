// The slides' published tables and worked examples beside tscope's numbers (slide_tables.h).
#include "model/theory/slide_tables.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "model/core/error.h"
#include "model/theory/cost.h"

namespace tscope {

namespace {
constexpr double kBlank = std::numeric_limits<double>::quiet_NaN();

void requirePositive(const char* name, double v) {
  if (!(v > 0) || !std::isfinite(v))
    throw Error(std::string("training cost: ") + name + " must be positive and finite (got " + std::to_string(v) + ")");
}
}  // namespace

const std::vector<TranslationRow>& vaswaniTable2() {
  // Vaswani et al. 2017, Table 2, as printed (the lecture shows the same rows).
  static const std::vector<TranslationRow> rows = {
      {"ByteNet", 23.75, kBlank, kBlank, kBlank},
      {"Deep-Att + PosUnk", kBlank, 39.2, kBlank, 1.0e20},
      {"GNMT + RL", 24.6, 39.92, 2.3e19, 1.4e20},
      {"ConvS2S", 25.16, 40.46, 9.6e18, 1.5e20},
      {"MoE", 26.03, 40.56, 2.0e19, 1.2e20},
      {"Deep-Att + PosUnk Ensemble", kBlank, 40.4, kBlank, 8.0e20},
      {"GNMT + RL Ensemble", 26.30, 41.16, 1.8e20, 1.1e21},
      {"ConvS2S Ensemble", 26.36, 41.29, 7.7e19, 1.2e21},
      // The Transformers' cost is one cell across both language pairs in the paper.
      {"Transformer (base model)", 27.3, 38.1, 3.3e18, 3.3e18, 0, 100e3, 8 * 12.0},
      {"Transformer (big)", 28.4, 41.8, 2.3e19, 2.3e19, 1, 300e3, 8 * 3.5 * 24},
  };
  return rows;
}

double vaswaniTrainingTokens(const TranslationRow& row) { return row.steps * 25000.0; }

TrainingCost trainingCost(double params, double tokens, const GpuPricing& pricing) {
  requirePositive("parameters", params);
  requirePositive("tokens", tokens);
  requirePositive("price per GPU-hour", pricing.dollarsPerGpuHour);
  requirePositive("sustained FLOP/s per GPU", pricing.sustainedFlopsPerGpu);
  TrainingCost cost;
  cost.flops = trainingFlops(params, tokens);
  cost.gpuHours = cost.flops / pricing.sustainedFlopsPerGpu / 3600.0;
  cost.dollars = cost.gpuHours * pricing.dollarsPerGpuHour;
  return cost;
}

NamedRun llama2Run() { return NamedRun{"LLaMA-2 70B", 70e9, 2e12}; }

const std::vector<CostedRun>& costedRuns() {
  static const std::vector<CostedRun> runs = {
      // GPT-1 (Radford et al. 2018): tokens not published; D such that 6ND = OpenAI's "AI and
      // Compute" (2018) figure of 0.96 PF-days = 8.3e19 FLOP.
      {NamedRun{"GPT-1", 117e6, 0.96 * kFlopsPerPetaflopDay / (6 * 117e6)}, 50e3, 0,
       "not published: 6ND set to OpenAI's 0.96 PF-days (AI and Compute, 2018)"},
      // GPT-2 (Radford et al. 2019): 40 GB of WebText, ~200M words per GB, 4/3 tokens per word.
      {NamedRun{"GPT-2 1.5B", 1.5e9, 40 * 200e6 * 4.0 / 3.0}, 500e3, 0, "not published: one pass over 40 GB of WebText (~10.7B tokens) assumed"},
      {gpt3Run(), 4.6e6, 0, "Brown et al. 2020: 300B tokens"},
      {chinchillaRun(), 0, 0, "Hoffmann et al. 2022: 1.4T tokens"},
      // Touvron et al. 2023 (Llama 2), Table 2: 1,720,320 A100-80GB GPU-hours for the 70B model.
      {llama2Run(), 0, 1720320, "Touvron et al. 2023: 2T tokens"},
  };
  return runs;
}

int imagePatchTokens(int side, int patch) {
  if (side <= 0 || patch <= 0 || side % patch != 0)
    throw Error("image tokens: the patch (" + std::to_string(patch) + ") must divide the side (" + std::to_string(side) + ")");
  return (side / patch) * (side / patch);
}

double attentionFlopsKaplan(const ModelConfig& config, int contextLength) { return flopsPerToken(config, contextLength).attentionForward; }

double attentionFlopsLecture(const ModelConfig& config, int contextLength) { return 2.0 * attentionFlopsKaplan(config, contextLength); }

SlideChinchillaExample slideChinchillaExample() {
  SlideChinchillaExample e;
  e.power = std::pow(e.flops, 0.37);
  e.paramsFromFormula = 0.73 * e.power;
  e.tokensFromFormula = 1.45 * e.power;
  e.slideBudget = trainingFlops(e.slideParams, e.slideTokens);
  e.hoffmann = chinchillaOptimum(chinchillaHoffmann2022(), e.flops);
  e.besiroglu = chinchillaOptimum(chinchillaBesiroglu2024(), e.flops);
  e.whereItGoesWrong =
      "The slide's answer spends 6 x 136M x 270M = 2.2e17 FLOP, not 1e23: with exponents of 0.37 the "
      "tokens cannot grow as C / 6N, and (1e23)^0.37 is 3.24e8, not 1.86e8. Chinchilla's N and D both "
      "grow about as C^0.5, giving tens of billions of parameters and ~20 tokens each (not 2).";
  return e;
}

const std::vector<Gpt3PaperModel>& gpt3Table21() {
  // Brown et al. 2020, Table 2.1 ("Sizes, architectures, and learning hyper-parameters (batch size
  // in tokens and learning rate) of the models which we trained"), as printed, and section 2.1
  // ("All models use a context window of n_ctx = 2048 tokens"). Two rows do not multiply out as
  // printed: the XL's 24 heads of 128 make 3072, not its d_model of 2048 (the slide's 16 x 128 does),
  // and the 13B's 40 heads of 128 make 5120, not 5140.
  static const std::vector<Gpt3PaperModel> rows = {
      {"GPT-3 Small", 125e6, 12, 768, 12, 64, 2048, 0.5e6, 6.0e-4},  {"GPT-3 Medium", 350e6, 24, 1024, 16, 64, 2048, 0.5e6, 3.0e-4},
      {"GPT-3 Large", 760e6, 24, 1536, 16, 96, 2048, 0.5e6, 2.5e-4}, {"GPT-3 XL", 1.3e9, 24, 2048, 24, 128, 2048, 1e6, 2.0e-4},
      {"GPT-3 2.7B", 2.7e9, 32, 2560, 32, 80, 2048, 1e6, 1.6e-4},    {"GPT-3 6.7B", 6.7e9, 32, 4096, 32, 128, 2048, 2e6, 1.2e-4},
      {"GPT-3 13B", 13.0e9, 40, 5140, 40, 128, 2048, 2e6, 1.0e-4},   {"GPT-3 175B", 175.0e9, 96, 12288, 96, 128, 2048, 3.2e6, 0.6e-4},
  };
  return rows;
}

const std::vector<Gpt3SpecColumn>& gpt3SlideColumns() {
  // The slide's Large (1.3B, 2048 wide, 128 per head) is Table 2.1's GPT-3 XL, not its Large (760M).
  static const std::vector<Gpt3SpecColumn> columns = {{"Small", 0}, {"Medium", 1}, {"Large", 3}, {"175B", 7}};
  return columns;
}

namespace {

using Gpt3Field = double (*)(const Gpt3PaperModel&);

struct Gpt3SlideRow {
  const char* label;
  std::vector<std::string> text;  // as printed
  std::vector<double> value;
  Gpt3Field field;  // nullptr: not checked against the paper
};

// The slide's table as printed (Appendix A1: GPT-3 Complete Specifications).
const std::vector<Gpt3SlideRow>& gpt3SlideRows() {
  static const std::vector<Gpt3SlideRow> rows = {
      {"Parameters", {"125M", "350M", "1.3B", "175B"}, {125e6, 350e6, 1.3e9, 175e9}, [](const Gpt3PaperModel& m) { return m.params; }},
      {"Layers", {"12", "24", "24", "96"}, {12, 24, 24, 96}, [](const Gpt3PaperModel& m) { return double(m.layers); }},
      {"Hidden Size", {"768", "1024", "2048", "12,288"}, {768, 1024, 2048, 12288}, [](const Gpt3PaperModel& m) { return double(m.dModel); }},
      {"Heads", {"12", "16", "16", "96"}, {12, 16, 16, 96}, [](const Gpt3PaperModel& m) { return double(m.heads); }},
      {"Head Dimension", {"64", "64", "128", "128"}, {64, 64, 128, 128}, [](const Gpt3PaperModel& m) { return double(m.dHead); }},
      {"Context", {"2048", "2048", "2048", "2048"}, {2048, 2048, 2048, 2048}, [](const Gpt3PaperModel& m) { return double(m.context); }},
      {"Batch Size", {"0.5M", "0.5M", "1M", "3.2M"}, {0.5e6, 0.5e6, 1e6, 3.2e6}, [](const Gpt3PaperModel& m) { return m.batchTokens; }},
      {"Learning Rate", {"6e-4", "3e-4", "2.5e-4", "1.2e-4"}, {6e-4, 3e-4, 2.5e-4, 1.2e-4}, [](const Gpt3PaperModel& m) { return m.learningRate; }},
      {"LAMBADA (acc)", {"42.7", "54.3", "63.6", "76.2"}, {42.7, 54.3, 63.6, 76.2}, nullptr},
      {"HellaSwag (acc)", {"43.6", "54.7", "67.4", "78.9"}, {43.6, 54.7, 67.4, 78.9}, nullptr},
  };
  return rows;
}

bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// Which Table 2.1 models have the slide's value (when it differs), or, for the slide's Large, what
// the paper's own Large (760M) has where that is not the XL's.
std::string gpt3Note(const Gpt3SlideRow& row, const Gpt3SpecCell& cell, int paperModel) {
  const std::vector<Gpt3PaperModel>& paper = gpt3Table21();
  if (cell.differs) {
    std::string names;
    for (const Gpt3PaperModel& m : paper)
      if (same(row.field(m), cell.slideValue)) names += (names.empty() ? "" : ", ") + m.name;
    return names.empty() ? "no model in Table 2.1 has " + paperText(cell.slideValue)
                         : "Table 2.1 gives " + paperText(cell.slideValue) + " to " + names;
  }
  const double large = row.field(paper[2]);
  if (paperModel == 3 && !same(large, cell.paper)) return "the paper's GPT-3 Large (760M) has " + paperText(large);
  return "";
}

}  // namespace

std::string paperText(double v) {
  char text[32];
  if (v >= 1e9) std::snprintf(text, sizeof text, "%gB", v / 1e9);
  else if (v >= 1e5) std::snprintf(text, sizeof text, "%gM", v / 1e6);
  else if (v < 1) std::snprintf(text, sizeof text, "%.1fe-4", v / 1e-4);
  else std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::vector<Gpt3SpecRow> gpt3SlideSpecs() {
  const std::vector<Gpt3PaperModel>& paper = gpt3Table21();
  std::vector<Gpt3SpecRow> out;
  for (const Gpt3SlideRow& row : gpt3SlideRows()) {
    Gpt3SpecRow r{row.label, {}};
    for (size_t c = 0; c < gpt3SlideColumns().size(); ++c) {
      Gpt3SpecCell cell;
      cell.slide = row.text[c];
      cell.slideValue = row.value[c];
      const int m = gpt3SlideColumns()[c].paperModel;
      cell.checked = row.field != nullptr;
      cell.paper = cell.checked ? row.field(paper[m]) : kBlank;
      cell.differs = cell.checked && !same(cell.paper, cell.slideValue);
      if (cell.checked) cell.note = gpt3Note(row, cell, m);
      r.cells.push_back(cell);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace tscope
