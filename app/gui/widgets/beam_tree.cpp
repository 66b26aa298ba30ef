// Beam-search tree drawing (see beam_tree.h). Layout: one column per depth; within a column the
// hypotheses are ordered by their parent's row, then by cumulative log-probability, and spread
// evenly over the height, so edges rarely cross.
#include "app/gui/widgets/beam_tree.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "app/gui/widgets/bar_chart.h"

namespace tscope::gui {

namespace {

constexpr ImU32 kBestColor = IM_COL32(240, 140, 40, 255);
constexpr ImU32 kKeptColor = IM_COL32(60, 130, 225, 255);

std::string nodeLabel(const BeamNode& node, const Tokenizer& tokenizer) {
  if (node.parent < 0) return "prompt";
  char logProb[32];
  std::snprintf(logProb, sizeof logProb, " %.2f", node.logProb);
  return tokenLabel(tokenizer.tokenText(node.token), 10) + logProb;
}

// The generated text from the root to `index`.
std::string sequenceText(const BeamResult& beam, int index, const Tokenizer& tokenizer) {
  std::vector<int> tokens;
  for (int at = index; at >= 0 && beam.nodes[at].parent >= 0; at = beam.nodes[at].parent) tokens.push_back(beam.nodes[at].token);
  std::reverse(tokens.begin(), tokens.end());
  std::string text;
  for (int id : tokens) text += tokenizer.tokenText(id);
  return text;
}

void drawTooltip(const BeamResult& beam, int index, const Tokenizer& tokenizer) {
  const BeamNode& node = beam.nodes[index];
  ImGui::BeginTooltip();
  if (node.parent < 0) {
    ImGui::TextUnformatted("the prompt: every hypothesis starts here");
  } else {
    ImGui::Text("token %s (id %d), step %d", tokenLabel(tokenizer.tokenText(node.token), 40).c_str(), node.token, node.depth);
    ImGui::Text("log p(token | its prefix) = %.3f", node.tokenLogProb);
    ImGui::Text("cumulative log-probability = %.3f", node.logProb);
    ImGui::TextUnformatted(node.inBest ? "on the best sequence"
                           : node.kept ? "kept in the beam at this step"
                                       : "pruned: not among the best at this step");
    ImGui::Text("sequence: %s", tokenLabel(sequenceText(beam, index, tokenizer), 60).c_str());
  }
  ImGui::EndTooltip();
}

}  // namespace

void drawBeamTree(const BeamResult& beam, const Tokenizer& tokenizer, ImVec2 size) {
  if (!ImGui::BeginChild("beam tree", size, true, ImGuiWindowFlags_HorizontalScrollbar)) {
    ImGui::EndChild();
    return;
  }
  const int count = static_cast<int>(beam.nodes.size());
  int depths = 0;
  for (const BeamNode& node : beam.nodes) depths = std::max(depths, node.depth + 1);
  // Columns by depth, each ordered by the parent's row then by cumulative log-probability.
  std::vector<std::vector<int>> columns(depths);
  std::vector<int> rowOf(count, 0);
  for (int i = 0; i < count; ++i) columns[beam.nodes[i].depth].push_back(i);
  for (auto& column : columns) {
    std::stable_sort(column.begin(), column.end(), [&](int a, int b) {
      const BeamNode &x = beam.nodes[a], &y = beam.nodes[b];
      const int px = x.parent >= 0 ? rowOf[x.parent] : 0, py = y.parent >= 0 ? rowOf[y.parent] : 0;
      return px != py ? px < py : x.logProb > y.logProb;
    });
    for (size_t row = 0; row < column.size(); ++row) rowOf[column[row]] = static_cast<int>(row);
  }
  std::vector<std::string> labels(count);
  float labelWidth = 0;
  size_t tallest = 1;
  for (int i = 0; i < count; ++i) {
    labels[i] = nodeLabel(beam.nodes[i], tokenizer);
    labelWidth = std::max(labelWidth, ImGui::CalcTextSize(labels[i].c_str()).x);
  }
  for (const auto& column : columns) tallest = std::max(tallest, column.size());

  const float font = ImGui::GetFontSize(), pad = font * 0.3f, lineHeight = ImGui::GetTextLineHeight();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float boxWidth = labelWidth + 2 * pad, boxHeight = lineHeight + 2 * pad;
  const float columnStep = std::max(boxWidth + font * 2.5f, avail.x / std::max(1, depths));
  const float height = std::max(avail.y, tallest * (boxHeight + font * 0.25f));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  auto boxMin = [&](int i) {
    const BeamNode& node = beam.nodes[i];
    const float rows = static_cast<float>(columns[node.depth].size());
    const float centreY = origin.y + height * (rowOf[i] + 0.5f) / rows;
    return ImVec2(origin.x + node.depth * columnStep + pad, centreY - boxHeight * 0.5f);
  };

  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 pruned = ImGui::GetColorU32(ImGuiCol_TextDisabled), text = ImGui::GetColorU32(ImGuiCol_Text);
  // Edges: pruned first, then kept, then the best path on top.
  for (int pass = 0; pass < 3; ++pass)
    for (int i = 0; i < count; ++i) {
      const BeamNode& node = beam.nodes[i];
      if (node.parent < 0) continue;
      const int kind = node.inBest ? 2 : node.kept ? 1 : 0;
      if (kind != pass) continue;
      const ImVec2 a = boxMin(node.parent), b = boxMin(i);
      const ImVec2 from(a.x + boxWidth, a.y + boxHeight * 0.5f), to(b.x, b.y + boxHeight * 0.5f);
      const float bend = (to.x - from.x) * 0.5f;
      const ImU32 color = kind == 2 ? kBestColor : kind == 1 ? kKeptColor : pruned;
      draw->AddBezierCubic(from, ImVec2(from.x + bend, from.y), ImVec2(to.x - bend, to.y), to, color, kind == 2 ? 3.0f : kind == 1 ? 1.6f : 1.0f);
    }
  int hovered = -1;
  const ImVec2 mouse = ImGui::GetMousePos();
  const bool windowHovered = ImGui::IsWindowHovered();
  for (int i = 0; i < count; ++i) {
    const BeamNode& node = beam.nodes[i];
    const ImVec2 min = boxMin(i), max(min.x + boxWidth, min.y + boxHeight);
    const bool active = node.kept || node.inBest || node.parent < 0;
    if (node.inBest || node.parent < 0) draw->AddRectFilled(min, max, IM_COL32(240, 140, 40, 70), pad);
    else if (node.kept) draw->AddRectFilled(min, max, IM_COL32(60, 130, 225, 60), pad);
    draw->AddRect(min, max, node.inBest || node.parent < 0 ? kBestColor : node.kept ? kKeptColor : pruned, pad, 0, node.inBest ? 2.5f : 1.0f);
    draw->AddText(ImVec2(min.x + pad, min.y + pad), active ? text : pruned, labels[i].c_str());
    if (windowHovered && mouse.x >= min.x && mouse.x < max.x && mouse.y >= min.y && mouse.y < max.y) hovered = i;
  }
  ImGui::Dummy(ImVec2(depths * columnStep, height));
  if (hovered >= 0) drawTooltip(beam, hovered, tokenizer);
  ImGui::EndChild();
}

}  // namespace tscope::gui
