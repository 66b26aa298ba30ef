// The Translation panel's drawing helpers (translation_views.h). The lines' labels are thinned to
// every k-th when they would touch, so a long character-level source never overprints.
#include "app/gui/panels/translation/translation_views.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "model/tokenize/tokenizer.h"

namespace tscope::gui {

namespace {

float widestLabel(const std::vector<std::string>& labels) {
  float widest = 0;
  for (const std::string& label : labels) widest = std::max(widest, ImGui::CalcTextSize(label.c_str()).x);
  return widest;
}

bool mouseIn(ImVec2 min, ImVec2 max) {
  const ImVec2 mouse = ImGui::GetMousePos();
  return ImGui::IsWindowHovered() && mouse.x >= min.x && mouse.x < max.x && mouse.y >= min.y && mouse.y < max.y;
}

}  // namespace

std::string axisLabel(const std::string& token, size_t maxChars) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < token.size(); ++chars) {
    if (chars == maxChars) {
      out += "..";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(token[i]);
    const size_t length = std::min(token.size() - i, c >= 0xF0 ? size_t{4} : c >= 0xE0 ? size_t{3} : c >= 0xC0 ? size_t{2} : size_t{1});
    if (c == ' ') out += "\u00B7";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) out += "?";
    else out += token.substr(i, length);
    i += length;
  }
  return out;
}

int drawAlignmentLines(const std::vector<float>& cross, int T, int S, const std::vector<std::string>& rowLabels,
                       const std::vector<std::string>& colLabels, ImVec2 size, int outlinedRow, ScreenRect* area) {
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::Dummy(size);
  if (area) *area = {origin.x, origin.y, origin.x + size.x, origin.y + size.y};
  if (T <= 0 || S <= 0 || cross.size() < (size_t)T * S) return -1;
  const float f = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeight();
  const float top = origin.y + lineH * 1.3f, bottom = origin.y + size.y - lineH * 1.5f;
  const float sourceStep = size.x / S, targetStep = size.x / T;
  auto sourceX = [&](int j) { return origin.x + (j + 0.5f) * sourceStep; };
  auto targetX = [&](int t) { return origin.x + (t + 0.5f) * targetStep; };
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  // Hovering under the target rail picks a row.
  int hovered = -1;
  if (mouseIn(ImVec2(origin.x, bottom - lineH), ImVec2(origin.x + size.x, origin.y + size.y)))
    hovered = std::clamp((int)((ImGui::GetMousePos().x - origin.x) / targetStep), 0, T - 1);
  const int focus = hovered >= 0 ? hovered : outlinedRow;
  for (int t = 0; t < T; ++t) {
    if (t == focus) continue;  // drawn last, on top
    for (int j = 0; j < S; ++j) {
      const float w = cross[(size_t)t * S + j];
      if (!(w > 0.01f)) continue;
      const float alpha = (40 + 215 * w) * (focus >= 0 ? 0.25f : 1.0f);
      draw->AddLine(ImVec2(targetX(t), bottom), ImVec2(sourceX(j), top), IM_COL32(60, 140, 255, (int)alpha), 1.0f + 4.0f * w);
    }
  }
  if (focus >= 0 && focus < T)
    for (int j = 0; j < S; ++j) {
      const float w = cross[(size_t)focus * S + j];
      if (w > 0.01f)
        draw->AddLine(ImVec2(targetX(focus), bottom), ImVec2(sourceX(j), top), IM_COL32(235, 80, 50, (int)(60 + 195 * w)), 1.5f + 5.0f * w);
    }
  // The two rails of tokens: labels thinned to every k-th where they would touch.
  const int sourceLabelStep = std::max(1, (int)std::ceil((widestLabel(colLabels) + f * 0.1f) / sourceStep));
  for (int j = 0; j < S; ++j) {
    draw->AddCircleFilled(ImVec2(sourceX(j), top), std::max(1.5f, f * 0.12f), dim);
    if (j % sourceLabelStep || j >= (int)colLabels.size()) continue;
    const float width = ImGui::CalcTextSize(colLabels[j].c_str()).x;
    draw->AddText(ImVec2(sourceX(j) - width * 0.5f, origin.y), ink, colLabels[j].c_str());
  }
  const int targetLabelStep = std::max(1, (int)std::ceil((widestLabel(rowLabels) + f * 0.25f) / targetStep));
  for (int t = 0; t < T; ++t) {
    draw->AddCircleFilled(ImVec2(targetX(t), bottom), std::max(1.5f, f * 0.12f), t == focus ? kOutline : dim);
    if ((t % targetLabelStep && t != focus) || t >= (int)rowLabels.size()) continue;
    const float width = ImGui::CalcTextSize(rowLabels[t].c_str()).x;
    draw->AddText(ImVec2(targetX(t) - width * 0.5f, bottom + lineH * 0.35f), t == focus ? kOutline : ink, rowLabels[t].c_str());
  }
  return hovered;
}

bool probabilityChip(const std::string& label, float probability, bool outlined, bool dim) {
  const float f = ImGui::GetFontSize(), lineH = ImGui::GetTextLineHeight();
  char number[16] = "";
  if (probability >= 0.01f) std::snprintf(number, sizeof number, "%.2f", probability);
  else if (probability >= 0) std::snprintf(number, sizeof number, "%.0e", probability);
  const float small = 0.8f;
  const float numberW = ImGui::GetFont()->CalcTextSizeA(f * small, FLT_MAX, 0.0f, number).x;
  const float padX = f * 0.35f, barH = std::max(2.0f, f * 0.18f);
  const ImVec2 size(std::max(ImGui::CalcTextSize(label.c_str()).x, numberW) + 2 * padX, lineH + f * small + barH + f * 0.45f);
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("chip", size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 max(at.x + size.x, at.y + size.y);
  draw->AddRectFilled(at, max, ImGui::GetColorU32(hovered ? ImGuiCol_ButtonHovered : ImGuiCol_Button, dim ? 0.5f : 1.0f), f * 0.2f);
  if (outlined || hovered) draw->AddRect(at, max, kOutline, f * 0.2f, 0, 2.0f);
  const ImU32 ink = ImGui::GetColorU32(dim ? ImGuiCol_TextDisabled : ImGuiCol_Text);
  const float labelW = ImGui::CalcTextSize(label.c_str()).x;
  draw->AddText(ImVec2(at.x + (size.x - labelW) * 0.5f, at.y + f * 0.1f), ink, label.c_str());
  if (probability >= 0) {
    draw->AddText(ImGui::GetFont(), f * small, ImVec2(at.x + (size.x - numberW) * 0.5f, at.y + f * 0.1f + lineH), ink, number);
    // The probability as a bar on a faint track (the Next-token panel's bar blue: it reads on both themes).
    const float barY = max.y - barH - f * 0.15f;
    draw->AddRectFilled(ImVec2(at.x + padX, barY), ImVec2(max.x - padX, barY + barH), ImGui::GetColorU32(ImGuiCol_Text, 0.15f));
    draw->AddRectFilled(ImVec2(at.x + padX, barY), ImVec2(at.x + padX + (size.x - 2 * padX) * std::clamp(probability, 0.0f, 1.0f), barY + barH),
                        IM_COL32(60, 130, 225, 255));
  }
  return hovered;
}

bool sourceChip(const std::string& label) {
  const float f = ImGui::GetFontSize();
  const ImVec2 size(ImGui::CalcTextSize(label.c_str()).x + f * 0.5f, ImGui::GetTextLineHeight() + f * 0.1f);
  const ImVec2 at = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("chip", size);
  const bool hovered = ImGui::IsItemHovered();
  ImGui::GetWindowDrawList()->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y),
                                            ImGui::GetColorU32(hovered ? ImGuiCol_ButtonHovered : ImGuiCol_Button), f * 0.2f);
  ImGui::GetWindowDrawList()->AddText(ImVec2(at.x + f * 0.25f, at.y + f * 0.05f), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
  return hovered;
}

// What the snapshot holds of the translation.

DecodeMode modeOf(const AppState& st) {
  if (st.beamWidth > 0) return DecodeMode::Beam;
  return st.sampling.greedy ? DecodeMode::Greedy : DecodeMode::Sample;
}

const char* modeName(DecodeMode mode) {
  switch (mode) {
    case DecodeMode::Greedy: return "greedy";
    case DecodeMode::Sample: return "sample";
    case DecodeMode::Beam: return "beam";
  }
  return "";
}

// True when the snapshot was computed for the source and target on screen.
bool isCurrent(const Snapshot& s, const AppState& st) { return s.request.prompt == st.prompt && s.request.source == st.source; }

// Index of the first target token in the decoder's input: 1 after the start token (0 when a target
// past the context lost it).
size_t firstTarget(const Snapshot& s, const ModelConfig& c) {
  return s.droppedIds.empty() && !s.ids.empty() && s.ids[0] == c.decoder_start_token_id ? 1 : 0;
}

bool finished(const Snapshot& s, const ModelConfig& c) { return s.ids.size() > firstTarget(s, c) && s.ids.back() == c.eos_token_id; }

// The target as text, without the end token.
std::string targetText(const Snapshot& s, const ModelConfig& c) {
  std::string text;
  for (size_t i = firstTarget(s, c); i < s.ids.size() && i < s.tokenText.size(); ++i)
    if (s.ids[i] != c.eos_token_id || i + 1 < s.ids.size()) text += s.tokenText[i];
  return text;
}

std::string decodeIds(const Session& session, const std::vector<int>& ids) {
  try {
    return session.tokenizer() ? session.tokenizer()->decode(ids) : "";
  } catch (const std::exception&) {
    return "?";
  }
}

const std::string& tokenAt(const std::vector<std::string>& text, int i) {
  static const std::string none = "?";
  return i >= 0 && i < (int)text.size() ? text[i] : none;
}

}  // namespace tscope::gui
