// The Scaling panel's "Cost of training" tab: the named runs (GPT-1, GPT-2, GPT-3, Chinchilla,
// LLaMA-2 70B) in FLOP (6ND), GPU-hours and dollars at an editable price per GPU-hour and sustained
// FLOP/s per GPU, beside the slide "The Cost of Scale" ("GPT-1 (117M) $50K", ...); and the slide
// "Worked Example: Compute-Optimal Model" at C = 1e23 beside tscope's Chinchilla optimum. Every
// number comes from app/session/published_json.h (model/theory/slide_tables.h).
#include <imgui.h>

#include <cstdio>
#include <string>

#include "app/gui/panels/scaling/panel_scaling.h"
#include "app/gui/widgets/plot.h"  // formatCount, formatScientific
#include "app/session/published_json.h"

namespace tscope::gui {

namespace {

std::string dollars(double value) {
  char text[32];
  if (value >= 1e6) std::snprintf(text, sizeof text, "$%.2fM", value / 1e6);
  else if (value >= 1e3) std::snprintf(text, sizeof text, "$%.1fK", value / 1e3);
  else std::snprintf(text, sizeof text, "$%.0f", value);
  return text;
}

std::string orBlank(const nlohmann::json& value, std::string (*format)(double)) { return value.is_null() ? "" : format(value.get<double>()); }

void drawPricing(GpuPricing& pricing) {
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  double price = pricing.dollarsPerGpuHour, flops = pricing.sustainedFlopsPerGpu / 1e12;
  if (ImGui::InputDouble("$ per GPU-hour", &price, 0.1, 1.0, "%.2f") && price > 0) pricing.dollarsPerGpuHour = price;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::InputDouble("sustained TFLOP/s per GPU", &flops, 1, 10, "%.1f") && flops > 0) pricing.sustainedFlopsPerGpu = flops * 1e12;
  ImGui::SameLine();
  if (ImGui::SmallButton("V100, Lambda 2020")) pricing = GpuPricing{};
  ImGui::SameLine();
  // LLaMA-2 70B: 8.4e23 FLOP in 1,720,320 A100-hours (Touvron et al. 2023) = 135.6 TFLOP/s each.
  if (ImGui::SmallButton("A100 as LLaMA-2 ran")) pricing.sustainedFlopsPerGpu = llama2Run().flops() / (1720320.0 * 3600);
  ImGui::TextDisabled(
      "Defaults: Lambda Labs' 2020 estimate of GPT-3's cost (Chuan Li, \"OpenAI's GPT-3 Language Model: A Technical Overview\"): a V100 "
      "sustaining 28 TFLOP/s at $1.50 an hour, 355 GPU-years and $4.6M for GPT-3, the slide's figure.");
}

void drawRuns(const nlohmann::json& cost) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("training_cost", 8, flags)) return;
  for (const char* heading : {"run", "N", "D", "C = 6ND (FLOP)", "GPU-hours", "cost", "the slide", "published GPU-hours"})
    ImGui::TableSetupColumn(heading);
  ImGui::TableHeadersRow();
  for (const nlohmann::json& r : cost["runs"]) {
    ImGui::TableNextRow();
    const std::string cells[] = {r["name"].get<std::string>(),
                                 formatCount(r["params"]),
                                 formatCount(r["tokens"]),
                                 formatScientific(r["flops"]),
                                 formatCount(r["gpu_hours"]),
                                 dollars(r["dollars"]),
                                 orBlank(r["slide_dollars"], dollars),
                                 orBlank(r["published_gpu_hours"], formatCount)};
    for (const std::string& text : cells) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(text.c_str());
      if (&text == &cells[2] && ImGui::IsItemHovered()) ImGui::SetTooltip("D: %s", r["tokens_source"].get<std::string>().c_str());
    }
  }
  ImGui::EndTable();
  ImGui::TextWrapped(
      "GPT-1's and GPT-2's tokens were not published (hover D for the assumption). The slide's \"100x parameters ~ 1000x cost\" "
      "holds only when the tokens grow about 10x too: C = 6ND.");
}

void drawWorkedExample(const nlohmann::json& e) {
  ImGui::TextUnformatted("The slide's worked example: C = 1e23 FLOP, \"N_opt ~ 0.73 x C^0.37\", \"D_opt ~ 1.45 x C^0.37\"");
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("chinchilla_example", 5, flags)) return;
  for (const char* heading : {"", "the slide", "its formula, computed", "tscope: Hoffmann 2022", "tscope: Besiroglu 2024"})
    ImGui::TableSetupColumn(heading);
  ImGui::TableHeadersRow();
  const nlohmann::json &slide = e["slide"], &formula = e["formula"], &h = e["hoffmann"], &b = e["besiroglu"];
  const auto row = [](std::initializer_list<std::string> texts) {
    ImGui::TableNextRow();
    for (const std::string& text : texts) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(text.c_str());
    }
  };
  const auto ratio = [](double d, double n) {
    char text[16];
    std::snprintf(text, sizeof text, "%.1f", d / n);
    return std::string(text);
  };
  const double flops = e["flops"];
  row({"(1e23)^0.37", formatScientific(slide["power"]), formatScientific(formula["power"]), "", ""});
  row({"N_opt (parameters)", formatCount(slide["params"]), formatCount(formula["params"]), formatCount(h["params"]), formatCount(b["params"])});
  row({"D_opt (tokens)", formatCount(slide["tokens"]), formatCount(formula["tokens"]), formatCount(h["tokens"]), formatCount(b["tokens"])});
  row({"D / N", ratio(slide["tokens"], slide["params"]), ratio(formula["tokens"], formula["params"]), ratio(h["tokens"], h["params"]),
       ratio(b["tokens"], b["params"])});
  row({"6ND spent (FLOP)", formatScientific(slide["budget_spent"]),
       formatScientific(6.0 * formula["params"].get<double>() * formula["tokens"].get<double>()), formatScientific(flops), formatScientific(flops)});
  ImGui::EndTable();
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.2f, 1.0f));
  ImGui::TextWrapped("Where the slide goes wrong: %s", e["where_it_goes_wrong"].get<std::string>().c_str());
  ImGui::PopStyleColor();
}

}  // namespace

void drawTrainingCost(PanelContext& ctx, ScalingView& v) {
  const nlohmann::json cost = trainingCostJson(v.pricing), example = chinchillaExampleJson();
  ctx.shared.facts["scaling_cost"] = cost;
  ctx.shared.facts["chinchilla_example"] = example;
  ImGui::TextUnformatted("The cost of training: C = 6ND, GPU-hours = C / sustained FLOP/s, dollars = GPU-hours x price");
  drawPricing(v.pricing);
  drawRuns(cost);
  ImGui::Spacing();
  ImGui::Separator();
  drawWorkedExample(example);
}

}  // namespace tscope::gui
