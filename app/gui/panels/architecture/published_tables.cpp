// Vaswani et al. 2017 ("Attention Is All You Need", arXiv 1706.03762), Table 2, and the slide
// figures of a preset, each beside tscope's number (model/theory/slide_tables.h, cost.h).
#include "app/gui/panels/architecture/published_tables.h"

#include <imgui.h>

#include <cmath>
#include <string>
#include <vector>

#include "app/gui/widgets/plot.h"  // formatCount, formatScientific
#include "app/session/published_json.h"
#include "model/core/units.h"           // formatBytes
#include "model/theory/slide_tables.h"  // paperText

namespace tscope::gui {

namespace {

std::string cell(double value, bool scientific) {
  if (std::isnan(value)) return "";
  if (scientific) return formatScientific(value);
  char text[16];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

void drawTranslationTable(nlohmann::json& facts) {
  const nlohmann::json rows = translationTableJson();
  facts["table2"] = rows;
  ImGui::TextWrapped(
      "Vaswani et al. 2017, Table 2: newstest2014 BLEU and training cost. The paper's cost is P100-hours x 9.5 TFLOP/s "
      "(base: 8 GPUs x 12 h; big: 8 x 3.5 days), not counted operations; tscope's 6ND uses the non-embedding parameters and "
      "D = steps x 25,000 tokens (base 100k steps, big 300k).");
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("table2", 7, flags)) return;
  for (const char* heading : {"model", "BLEU EN-DE", "EN-FR", "cost EN-DE (FLOPs)", "EN-FR", "parameters: paper / tscope", "tscope 6ND"})
    ImGui::TableSetupColumn(heading);
  ImGui::TableHeadersRow();
  for (const nlohmann::json& r : rows) {
    const auto value = [&](const char* key) { return r[key].is_null() ? NAN : r[key].get<double>(); };
    const bool ours = r.contains("parameters");
    ImGui::TableNextRow();
    if (ours) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, ImGui::GetColorU32(ImGuiCol_Header, 0.6f));
    const std::string texts[] = {r["model"].get<std::string>(),
                                 cell(value("bleu_en_de"), false),
                                 cell(value("bleu_en_fr"), false),
                                 cell(value("flops_en_de"), true),
                                 ours ? "(one cell)" : cell(value("flops_en_fr"), true),
                                 ours ? formatCount(value("published_parameters")) + " / " + formatCount(value("parameters")) : "",
                                 ours ? formatScientific(value("six_nd")) : ""};
    for (const std::string& text : texts) {
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(text.c_str());
    }
  }
  ImGui::EndTable();
}

void drawSlideFigures(const ModelPreset& preset, nlohmann::json& facts) {
  const nlohmann::json f = slideFiguresJson(preset);
  if (f.empty()) return;
  facts["slide"] = f;
  const double total = f["total"], active = f["active"];
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.2f, 1.0f));
  ImGui::TextWrapped(
      "The slide says %s parameters, \"only %s active\" and %.0f GB at inference. From the published shape tscope counts %s total "
      "(%+.1f%%) and %s active per token (one expert per layer: the slide's figure is %.1fx that); all %s weights stay "
      "resident, %s at 16 bits (%s for the active ones alone).",
      formatCount(preset.slideTotal).c_str(), formatCount(preset.slideActive).c_str(), preset.slideInferenceBytes / 1e9, formatCount(total).c_str(),
      100.0 * (total - preset.slideTotal) / preset.slideTotal, formatCount(active).c_str(), preset.slideActive / active, formatCount(total).c_str(),
      formatBytes(f["weights_16bit_bytes"].get<double>()).c_str(), formatBytes(f["active_16bit_bytes"].get<double>()).c_str());
  ImGui::PopStyleColor();
}

void drawGpt3Specs(nlohmann::json& facts) {
  const nlohmann::json specs = gpt3SpecsJson();
  facts["gpt3_specs"] = specs;
  ImGui::TextWrapped(
      "The slide \"Appendix A1: GPT-3 Complete Specifications\" as it prints it, each cell beside Brown et al. 2020's Table 2.1 "
      "for the model the slide means: the slide's Large (1.3B) is the paper's GPT-3 XL; the paper's Large has 760M parameters. "
      "Cells marked ! differ from the paper (hover a cell for which paper model has the slide's value); the accuracies were not "
      "checked against the paper's text. Table 2.1's XL row does not multiply out: 24 heads x 128 = 3072, not its d_model "
      "of 2048; the slide's 16 x 128 does.");
  const nlohmann::json& columns = specs["columns"];
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("gpt3_specs", 1 + static_cast<int>(columns.size()), flags)) return;
  ImGui::TableSetupColumn("slide row");
  std::vector<std::string> headings;
  for (const nlohmann::json& c : columns) headings.push_back(c["slide"].get<std::string>() + " (paper: " + c["paper"].get<std::string>() + ")");
  for (const std::string& h : headings) ImGui::TableSetupColumn(h.c_str());
  ImGui::TableHeadersRow();
  const ImVec4 warn(1.0f, 0.55f, 0.3f, 1.0f);
  for (const nlohmann::json& r : specs["rows"]) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r["label"].get<std::string>().c_str());
    for (const nlohmann::json& c : r["cells"]) {
      ImGui::TableNextColumn();
      const std::string slide = c["slide"].get<std::string>();
      if (!c["checked"].get<bool>()) {
        ImGui::Text("%s", slide.c_str());
        ImGui::SameLine();
        ImGui::TextDisabled("not checked");
      } else if (c["differs"].get<bool>()) {
        ImGui::TextColored(warn, "! %s  paper %s", slide.c_str(), paperText(c["paper"].get<double>()).c_str());
      } else {
        ImGui::Text("%s  = paper", slide.c_str());
      }
      const std::string note = c["note"].get<std::string>();
      if (!note.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", note.c_str());
    }
  }
  ImGui::EndTable();
  for (const nlohmann::json& r : specs["rows"])
    for (size_t i = 0; i < r["cells"].size(); ++i)
      if (r["cells"][i]["differs"].get<bool>())
        ImGui::BulletText("%s, %s: the slide's %s, Table 2.1's %s (%s)", r["label"].get<std::string>().c_str(),
                          columns[i]["slide"].get<std::string>().c_str(), r["cells"][i]["slide"].get<std::string>().c_str(),
                          paperText(r["cells"][i]["paper"].get<double>()).c_str(), r["cells"][i]["note"].get<std::string>().c_str());
}

}  // namespace tscope::gui
