// The Plot widget (see plot.h). Layout: the title and the y label sit above the plot area, tick
// labels left of and below it, the x label under those. Ticks: log axes spanning several decades
// get 10^k labels (every n-th decade when crowded) and 2..9 minor ticks; shorter log ranges get
// 1-2-5 labels; linear axes get 1-2-5 steps. Labels that would overlap their neighbour are dropped.
#include "app/gui/widgets/plot.h"

#include "app/gui/widgets/figure_sink.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace tscope::gui {

namespace {

ImU32 withAlpha(ImU32 colour, float alpha) {
  ImVec4 c = ImGui::ColorConvertU32ToFloat4(colour);
  c.w *= alpha;
  return ImGui::ColorConvertFloat4ToU32(c);
}

// A text label with a translucent backdrop in the window colour (readable over curves and grid).
void labelWithBackdrop(ImDrawList* draw, ImVec2 pos, ImU32 colour, const std::string& text, float opacity = 0.85f) {
  const ImVec2 size = ImGui::CalcTextSize(text.c_str());
  const float pad = ImGui::GetFontSize() * 0.15f;
  draw->AddRectFilled(ImVec2(pos.x - pad, pos.y - pad), ImVec2(pos.x + size.x + pad, pos.y + size.y + pad),
                      withAlpha(ImGui::GetColorU32(ImGuiCol_WindowBg), opacity), pad);
  draw->AddText(pos, colour, text.c_str());
}

}  // namespace

ImU32 categoryColour(int index, int count, float alpha) {
  float r, g, b;
  ImGui::ColorConvertHSVtoRGB(static_cast<float>(index) / static_cast<float>(std::max(1, count)), 0.7f, 0.95f, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, alpha));
}

Plot::Plot(const char* id, ImVec2 size) : id_(id) {
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  size_.x = size.x > 0 ? size.x : std::max(avail.x + size.x, ImGui::GetFontSize() * 10);
  size_.y = size.y > 0 ? size.y : std::max(avail.y + size.y, ImGui::GetFontSize() * 8);
}

void Plot::setAxes(double xmin, double xmax, bool logx, double ymin, double ymax, bool logy, std::string xlabel, std::string ylabel) {
  auto set = [](PlotAxis& a, double lo, double hi, bool log, std::string label) {
    a.log = log && lo > 0 && hi > 0;
    if (!(hi > lo)) hi = lo + (a.log ? lo : 1.0);  // an empty range still draws
    a.min = lo;
    a.max = hi;
    a.label = std::move(label);
  };
  set(x_, xmin, xmax, logx, std::move(xlabel));
  set(y_, ymin, ymax, logy, std::move(ylabel));
}

void Plot::setFormats(AxisFormat x, AxisFormat y) {
  x_.format = x;
  y_.format = y;
}

void Plot::line(std::string name, std::vector<double> xs, std::vector<double> ys, ImU32 colour, float thickness, bool inLegend) {
  series_.push_back(Series{std::move(name), std::move(xs), std::move(ys), colour, thickness, inLegend});
}

void Plot::point(std::string label, double x, double y, ImU32 colour, LabelSide side) {
  points_.push_back(Marker{std::move(label), x, y, colour, side});
}

void Plot::vline(double x, std::string label, ImU32 colour) { rules_.push_back(Rule{true, x, std::move(label), colour}); }

void Plot::hline(double y, std::string label, ImU32 colour) { rules_.push_back(Rule{false, y, std::move(label), colour}); }

void Plot::marker(std::string label, double x, double y, ImU32 colour) {
  points_.push_back(Marker{std::move(label), x, y, colour, LabelSide::AboveRight, false});
}

void Plot::note(double x, double y, std::string text, ImU32 colour) { notes_.push_back(Marker{std::move(text), x, y, colour}); }

float Plot::toScreenX(double x) const { return (float)std::clamp(areaMin_.x + axisFraction(x_, x) * (areaMax_.x - areaMin_.x), -1e5, 1e5); }

float Plot::toScreenY(double y) const { return (float)std::clamp(areaMax_.y - axisFraction(y_, y) * (areaMax_.y - areaMin_.y), -1e5, 1e5); }

double Plot::fromScreenX(float px) const { return axisValueAt(x_, (px - areaMin_.x) / (areaMax_.x - areaMin_.x)); }

double Plot::fromScreenY(float py) const { return axisValueAt(y_, (areaMax_.y - py) / (areaMax_.y - areaMin_.y)); }

// Decades are written "10" with a raised, smaller exponent; other labels as plain text.
ImVec2 Plot::tickLabelSize(const PlotAxis& axis, const Tick& tick) const {
  const float font = ImGui::GetFontSize();
  if (tick.decade) {
    const std::string exponent = std::to_string((int)std::lround(std::log10(tick.value)));
    const float width = ImGui::CalcTextSize("10").x + ImGui::GetFont()->CalcTextSizeA(font * 0.72f, FLT_MAX, 0, exponent.c_str()).x;
    return ImVec2(width, font * 1.3f);
  }
  return ImGui::CalcTextSize(tickText(axis, tick).c_str());
}

void Plot::drawTickLabel(ImDrawList* draw, const PlotAxis& axis, const Tick& tick, ImVec2 pos, ImU32 colour) const {
  const float font = ImGui::GetFontSize();
  if (tick.decade) {
    const std::string exponent = std::to_string((int)std::lround(std::log10(tick.value)));
    draw->AddText(ImVec2(pos.x, pos.y + font * 0.3f), colour, "10");
    draw->AddText(ImGui::GetFont(), font * 0.72f, ImVec2(pos.x + ImGui::CalcTextSize("10").x, pos.y), colour, exponent.c_str());
    return;
  }
  draw->AddText(pos, colour, tickText(axis, tick).c_str());
}

void Plot::drawAxes(ImDrawList* draw, const std::vector<Tick>& xTicks, const std::vector<Tick>& yTicks) const {
  const float font = ImGui::GetFontSize(), tickLength = font * 0.35f;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 grid = withAlpha(text, 0.13f), minorGrid = withAlpha(text, 0.05f);
  draw->AddRectFilled(areaMin_, areaMax_, withAlpha(text, 0.03f));
  float lastRight = -FLT_MAX;
  for (const Tick& t : xTicks) {
    const float x = toScreenX(t.value);
    draw->AddLine(ImVec2(x, areaMin_.y), ImVec2(x, areaMax_.y), t.major ? grid : minorGrid);
    draw->AddLine(ImVec2(x, areaMax_.y), ImVec2(x, areaMax_.y + (t.major ? tickLength : tickLength * 0.6f)), text);
    if (!t.major) continue;
    const ImVec2 size = tickLabelSize(x_, t);
    const float left = std::clamp(x - size.x / 2, areaMin_.x - font * 2, areaMax_.x + font * 0.8f - size.x);
    if (left < lastRight + font * 0.6f) continue;  // would overlap the previous label
    drawTickLabel(draw, x_, t, ImVec2(left, areaMax_.y + tickLength + font * 0.1f), text);
    lastRight = left + size.x;
  }
  float lastTop = FLT_MAX;
  for (const Tick& t : yTicks) {
    const float y = toScreenY(t.value);
    draw->AddLine(ImVec2(areaMin_.x, y), ImVec2(areaMax_.x, y), t.major ? grid : minorGrid);
    draw->AddLine(ImVec2(areaMin_.x - (t.major ? tickLength : tickLength * 0.6f), y), ImVec2(areaMin_.x, y), text);
    if (!t.major) continue;
    const ImVec2 size = tickLabelSize(y_, t);
    const float top = y - size.y / 2;
    if (top + size.y > lastTop - font * 0.1f) continue;
    drawTickLabel(draw, y_, t, ImVec2(areaMin_.x - tickLength - font * 0.25f - size.x, top), text);
    lastTop = top;
  }
  draw->AddRect(areaMin_, areaMax_, withAlpha(text, 0.6f));
}

void Plot::drawSeries(ImDrawList* draw) const {
  const float scale = ImGui::GetFontSize() / 16.0f;
  std::vector<ImVec2> run;
  for (const Series& s : series_) {
    auto flush = [&] {
      if (run.size() >= 2) draw->AddPolyline(run.data(), (int)run.size(), s.colour, 0, s.thickness * scale);
      run.clear();
    };
    for (size_t i = 0; i < std::min(s.xs.size(), s.ys.size()); ++i) {
      if (!plottable(s.xs[i], x_.log) || !plottable(s.ys[i], y_.log)) {
        flush();
        continue;
      }
      run.emplace_back(toScreenX(s.xs[i]), toScreenY(s.ys[i]));
    }
    flush();
  }
}

void Plot::drawRulesAndPoints(ImDrawList* draw) const {
  const float font = ImGui::GetFontSize(), scale = font / 16.0f;
  for (const Rule& r : rules_) {
    if (!plottable(r.value, r.vertical ? x_.log : y_.log)) continue;
    // Dashed: 8 px on, 5 px off (scaled with the font).
    const float dash = 8 * scale, gap = 5 * scale;
    if (r.vertical) {
      const float x = toScreenX(r.value);
      for (float y = areaMin_.y; y < areaMax_.y; y += dash + gap)
        draw->AddLine(ImVec2(x, y), ImVec2(x, std::min(y + dash, areaMax_.y)), r.colour, 2.0f * scale);
      if (!r.label.empty()) {
        const float width = ImGui::CalcTextSize(r.label.c_str()).x;
        const float left = x + font * 0.3f + width < areaMax_.x ? x + font * 0.3f : x - font * 0.3f - width;
        labelWithBackdrop(draw, ImVec2(left, areaMin_.y + font * 0.3f), r.colour, r.label);
      }
    } else {
      const float y = toScreenY(r.value);
      for (float x = areaMin_.x; x < areaMax_.x; x += dash + gap)
        draw->AddLine(ImVec2(x, y), ImVec2(std::min(x + dash, areaMax_.x), y), r.colour, 2.0f * scale);
      if (!r.label.empty())  // at the left end, above the line
        labelWithBackdrop(draw, ImVec2(areaMin_.x + font * 0.4f, y - font * 1.25f), r.colour, r.label);
    }
  }
  // Notes that would overlap one already drawn are left out (crowded curves keep the first labels).
  std::vector<ImVec4> taken;
  for (const Marker& n : notes_) {
    if (!plottable(n.x, x_.log) || !plottable(n.y, y_.log)) continue;
    const ImVec2 size = ImGui::CalcTextSize(n.label.c_str());
    const ImVec2 at(toScreenX(n.x) - size.x / 2, toScreenY(n.y) + font * 0.3f);
    const ImVec4 box(at.x, at.y, at.x + size.x, at.y + size.y);
    const bool overlaps =
        std::any_of(taken.begin(), taken.end(), [&](const ImVec4& t) { return box.x < t.z && t.x < box.z && box.y < t.w && t.y < box.w; });
    if (overlaps || box.w > areaMax_.y || box.z > areaMax_.x || box.x < areaMin_.x) continue;
    labelWithBackdrop(draw, at, n.colour, n.label, 0.6f);
    taken.push_back(box);
  }
  // Labels first, then every point on top, so no label hides another point.
  const ImU32 outline = ImGui::GetColorU32(ImGuiCol_Text);
  for (const Marker& p : points_) {
    if (!p.labelled || !plottable(p.x, x_.log) || !plottable(p.y, y_.log)) continue;
    const ImVec2 c(toScreenX(p.x), toScreenY(p.y));
    const float width = ImGui::CalcTextSize(p.label.c_str()).x;
    const bool right = p.side == LabelSide::AboveRight || p.side == LabelSide::BelowRight;
    const bool above = p.side == LabelSide::AboveRight || p.side == LabelSide::AboveLeft;
    float left = right ? c.x + font * 0.6f : c.x - font * 0.6f - width;
    left = std::clamp(left, areaMin_.x + font * 0.2f, areaMax_.x - font * 0.2f - width);
    labelWithBackdrop(draw, ImVec2(left, above ? c.y - font * 1.5f : c.y + font * 0.5f), outline, p.label);
  }
  for (const Marker& p : points_) {
    if (!plottable(p.x, x_.log) || !plottable(p.y, y_.log)) continue;
    const ImVec2 c(toScreenX(p.x), toScreenY(p.y));
    draw->AddCircleFilled(c, font * 0.38f, p.colour);
    draw->AddCircle(c, font * 0.38f, outline, 0, 1.5f * scale);
  }
}

std::vector<ImVec2> Plot::legendAboveLayout(float width, int* rows) const {
  const float font = ImGui::GetFontSize(), swatch = font * 1.4f;
  std::vector<ImVec2> at;
  float x = 0;
  int row = 0;
  for (const Series& s : series_) {
    if (!s.inLegend) continue;
    const float entry = swatch + font * 0.4f + ImGui::CalcTextSize(s.name.c_str()).x;
    if (x > 0 && x + entry > width) x = 0, ++row;
    at.emplace_back(x, (float)row);
    x += entry + font * 1.2f;
  }
  *rows = at.empty() ? 0 : row + 1;
  return at;
}

void Plot::drawLegendAbove(ImDrawList* draw, ImVec2 corner) const {
  const float font = ImGui::GetFontSize(), swatch = font * 1.4f;
  int rows = 0;
  const std::vector<ImVec2> at = legendAboveLayout(size_.x, &rows);
  size_t entry = 0;
  for (const Series& s : series_) {
    if (!s.inLegend) continue;
    const ImVec2 pos(corner.x + at[entry].x, corner.y + at[entry].y * font * 1.3f);
    draw->AddLine(ImVec2(pos.x, pos.y + font * 0.55f), ImVec2(pos.x + swatch, pos.y + font * 0.55f), s.colour,
                  std::max(2.0f, s.thickness * font / 16.0f));
    draw->AddText(ImVec2(pos.x + swatch + font * 0.4f, pos.y), ImGui::GetColorU32(ImGuiCol_Text), s.name.c_str());
    ++entry;
  }
}

void Plot::drawLegend(ImDrawList* draw) const {
  if (legend_ == LegendPlacement::Hidden || legend_ == LegendPlacement::Above) return;
  const float font = ImGui::GetFontSize(), row = font * 1.3f, swatch = font * 1.4f, pad = font * 0.5f;
  float width = 0;
  int rows = 0;
  for (const Series& s : series_)
    if (s.inLegend) width = std::max(width, ImGui::CalcTextSize(s.name.c_str()).x), ++rows;
  if (rows == 0) return;
  const ImVec2 box(swatch + font * 0.5f + width + 2 * pad, rows * row + 2 * pad - (row - font));
  const bool right = legend_ == LegendPlacement::TopRight || legend_ == LegendPlacement::BottomRight;
  const bool top = legend_ == LegendPlacement::TopRight || legend_ == LegendPlacement::TopLeft;
  const ImVec2 corner(right ? areaMax_.x - box.x - pad : areaMin_.x + pad, top ? areaMin_.y + pad : areaMax_.y - box.y - pad);
  draw->AddRectFilled(corner, ImVec2(corner.x + box.x, corner.y + box.y), withAlpha(ImGui::GetColorU32(ImGuiCol_WindowBg), 0.9f), pad * 0.5f);
  draw->AddRect(corner, ImVec2(corner.x + box.x, corner.y + box.y), ImGui::GetColorU32(ImGuiCol_Border), pad * 0.5f);
  float y = corner.y + pad;
  for (const Series& s : series_) {
    if (!s.inLegend) continue;
    const float mid = y + font * 0.5f;
    draw->AddLine(ImVec2(corner.x + pad, mid), ImVec2(corner.x + pad + swatch, mid), s.colour, std::max(2.0f, s.thickness * font / 16.0f));
    draw->AddText(ImVec2(corner.x + pad + swatch + font * 0.5f, y), ImGui::GetColorU32(ImGuiCol_Text), s.name.c_str());
    y += row;
  }
}

// A crosshair at the mouse, the nearest sample of every series at that x, and a tooltip listing them.
void Plot::drawHover(ImDrawList* draw, ImVec2 mouse) const {
  const float font = ImGui::GetFontSize();
  draw->AddLine(ImVec2(mouse.x, areaMin_.y), ImVec2(mouse.x, areaMax_.y), withAlpha(ImGui::GetColorU32(ImGuiCol_Text), 0.35f));
  struct Row {
    ImU32 colour;
    std::string name, value;
  };
  std::vector<Row> rows;
  for (const Series& s : series_) {
    size_t best = SIZE_MAX;
    float bestDistance = FLT_MAX;
    for (size_t i = 0; i < std::min(s.xs.size(), s.ys.size()); ++i) {
      if (!plottable(s.xs[i], x_.log) || !plottable(s.ys[i], y_.log)) continue;
      const float d = std::fabs(toScreenX(s.xs[i]) - mouse.x);
      if (d < bestDistance) bestDistance = d, best = i;
    }
    if (best == SIZE_MAX || bestDistance > font * 1.5f) continue;  // this series does not reach the mouse x
    const ImVec2 at(toScreenX(s.xs[best]), toScreenY(s.ys[best]));
    if (at.y < areaMin_.y || at.y > areaMax_.y) continue;
    draw->AddCircleFilled(at, font * 0.28f, s.colour);
    rows.push_back(Row{s.colour, s.name, y_.format(s.ys[best])});
  }
  for (const Marker& p : points_) {
    const ImVec2 at(toScreenX(p.x), toScreenY(p.y));
    if (std::hypot(at.x - mouse.x, at.y - mouse.y) < font) rows.push_back(Row{p.colour, p.label, x_.format(p.x) + ", " + y_.format(p.y)});
  }
  ImGui::BeginTooltip();
  ImGui::Text("%s: %s", x_.label.c_str(), x_.format(fromScreenX(mouse.x)).c_str());
  for (const Row& r : rows) {
    ImGui::ColorButton("##swatch", ImGui::ColorConvertU32ToFloat4(r.colour),
                       ImGuiColorEditFlags_NoTooltip | ImGuiColorEditFlags_NoPicker | ImGuiColorEditFlags_NoDragDrop,
                       ImVec2(font * 0.8f, font * 0.8f));
    ImGui::SameLine();
    ImGui::Text("%s:  %s", r.name.c_str(), r.value.c_str());
  }
  ImGui::EndTooltip();
}

PlotHover Plot::draw() {
  const float font = ImGui::GetFontSize(), tickLength = font * 0.35f;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  // Vertical layout first (it does not depend on tick labels), then the y ticks, whose widest label
  // sets the left margin, then the x ticks.
  const float titleRow = title_.empty() ? 0 : font * 1.4f, yLabelRow = y_.label.empty() ? 0 : font * 1.3f;
  int legendRows = 0;
  if (legend_ == LegendPlacement::Above) legendAboveLayout(size_.x, &legendRows);
  const float legendHeight = legendRows * font * 1.3f;
  const float bottom = tickLength + font * 1.45f + (x_.label.empty() ? 0 : font * 1.3f);
  areaMin_.y = origin.y + titleRow + legendHeight + yLabelRow + font * 0.4f;
  areaMax_.y = origin.y + size_.y - bottom;
  const std::vector<Tick> yTicks = axisTicks(y_, areaMax_.y - areaMin_.y, font * 2.2f);
  float labelWidth = font * 1.5f;
  for (const Tick& t : yTicks)
    if (t.major) labelWidth = std::max(labelWidth, tickLabelSize(y_, t).x);
  areaMin_.x = origin.x + labelWidth + tickLength + font * 0.5f;
  areaMax_.x = origin.x + size_.x - font * 1.0f;
  float widestX = font * 2.5f;
  for (double v : {x_.min, x_.max}) widestX = std::max(widestX, tickLabelSize(x_, Tick{v, true, x_.log}).x);
  const std::vector<Tick> xTicks = axisTicks(x_, areaMax_.x - areaMin_.x, widestX + font * 1.2f);

  ImGui::InvisibleButton(id_.c_str(), size_);
  PlotHover hover;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const bool overArea = mouse.x >= areaMin_.x && mouse.x <= areaMax_.x && mouse.y >= areaMin_.y && mouse.y <= areaMax_.y;
  hover.active = ImGui::IsItemHovered() && overArea;
  hover.clicked = hover.active && ImGui::IsMouseClicked(0);
  hover.held = ImGui::IsItemActive();
  if (hover.active || hover.held) {
    const float mx = std::clamp(mouse.x, areaMin_.x, areaMax_.x), my = std::clamp(mouse.y, areaMin_.y, areaMax_.y);
    hover.x = fromScreenX(mx);
    hover.y = fromScreenY(my);
  }

  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->PushClipRect(origin, ImVec2(origin.x + size_.x, origin.y + size_.y), true);  // long titles stop at the edge
  if (!title_.empty()) draw->AddText(origin, text, title_.c_str());
  if (legendRows > 0) drawLegendAbove(draw, ImVec2(origin.x, origin.y + titleRow));
  if (!y_.label.empty()) draw->AddText(ImVec2(origin.x, origin.y + titleRow + legendHeight), withAlpha(text, 0.85f), y_.label.c_str());
  if (!x_.label.empty()) {
    const float width = ImGui::CalcTextSize(x_.label.c_str()).x;
    draw->AddText(ImVec2((areaMin_.x + areaMax_.x - width) / 2, origin.y + size_.y - font * 1.25f), withAlpha(text, 0.85f), x_.label.c_str());
  }
  drawAxes(draw, xTicks, yTicks);
  draw->PushClipRect(areaMin_, areaMax_, true);
  drawSeries(draw);
  drawRulesAndPoints(draw);
  draw->PopClipRect();
  drawLegend(draw);
  draw->PopClipRect();
  if (hover.active) drawHover(draw, mouse);
  if (figureSinkOpen()) addFigure(id_, [figure = figure()] { return plotSvg(figure); });
  return hover;
}

PlotFigure Plot::figure() const {
  PlotFigure f{title_, x_, y_, {}, {}, {}, {}};
  for (const Series& s : series_) f.lines.push_back({s.name, s.xs, s.ys, s.colour, s.thickness, s.inLegend});
  for (const Marker& p : points_) f.points.push_back({p.label, p.x, p.y, p.colour, p.labelled});
  for (const Marker& n : notes_) f.notes.push_back({n.label, n.x, n.y, n.colour, true});
  for (const Rule& r : rules_) f.rules.push_back({r.vertical, r.value, r.label, r.colour});
  return f;
}

}  // namespace tscope::gui
