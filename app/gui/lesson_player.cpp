// Presenting a lesson: entering a step (its model opened first, then its state, architecture,
// expert and training run), the clicker's keys, the picker, the caption bar and the highlight.
// The App calls it at a few points of its frame; it reaches into the App as its friend.
#include "app/gui/lesson_player.h"

#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <filesystem>

#include "app/gui/app.h"
#include "app/gui/platform.h"
#include "app/gui/widgets/layout.h"
#include "model/core/error.h"

namespace tscope::gui {

namespace {
constexpr float kCaptionScale = 1.3f;      // the caption's text against the UI's
constexpr float kFormulaScale = 1.3f;      // the formula against the caption
constexpr float kMaxCaptionShare = 0.45f;  // of the window's height
constexpr ImU32 kHighlight = IM_COL32(255, 140, 0, 255);

bool sameModel(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  return std::filesystem::weakly_canonical(a, ec1) == std::filesystem::weakly_canonical(b, ec2);
}

std::string stepHeader(const Lesson& lesson, int step) {
  return lesson.title + " \u2014 step " + std::to_string(step + 1) + " / " + std::to_string(lesson.steps.size());
}

// The lectures the lessons belong to: the two lectures in their order, then any other, as first met.
std::vector<std::string> lectureOrder(const std::vector<Lesson>& lessons) {
  std::vector<std::string> order;
  for (const char* lecture : {"The Transformer", "Advanced Transformers"})
    if (std::any_of(lessons.begin(), lessons.end(), [&](const Lesson& l) { return l.lecture == lecture; })) order.push_back(lecture);
  for (const Lesson& l : lessons)
    if (std::find(order.begin(), order.end(), l.lecture) == order.end()) order.push_back(l.lecture);
  return order;
}

std::string choicesLine(const LessonCheck& check) {
  std::string line;
  for (const std::string& choice : check.choices) line += (line.empty() ? "" : "   \u00b7   ") + choice;
  return line;
}
}  // namespace

LessonPlayer::LessonPlayer(std::string lessonsDir, std::string modelsDir) : lessonsDir_(std::move(lessonsDir)), modelsDir_(std::move(modelsDir)) {
  lessons_ = loadLessons(lessonsDir_, &problems_);
}

bool LessonPlayer::start(const std::string& nameOrPath, int step, std::string* error) {
  auto shipped = std::find_if(lessons_.begin(), lessons_.end(), [&](const Lesson& l) { return l.name == nameOrPath; });
  try {
    if (shipped != lessons_.end()) lesson_ = *shipped;
    else if (nameOrPath.ends_with(".json") || std::filesystem::exists(nameOrPath)) lesson_ = loadLessonFile(nameOrPath);
    else {
      std::string names;
      for (const Lesson& l : lessons_) names += (names.empty() ? "" : ", ") + l.name;
      throw Error("no lesson '" + nameOrPath + "' (shipped: " + (names.empty() ? "none" : names) + ")");
    }
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
  startCaptured_ = false;
  trainingPreset_.clear();
  goTo(step);
  return true;
}

void LessonPlayer::goTo(int step) {
  if (!lesson_) return;
  step_ = std::clamp(step, 0, static_cast<int>(lesson_->steps.size()) - 1);
  active_ = entering_ = true;
  openAsked_ = revealed_ = false;
  liveAnswer_.clear();
  why_.clear();
  revealedFor_ = 0;
}

void LessonPlayer::beforeFrame(App& app) {
  if (!entering_ || !app.opening().empty()) return;
  const std::string model = lessonModelAtStep(*lesson_, step_, modelsDir_);
  modelMissing_ = false;
  if (!model.empty() && !sameModel(model, app.session().modelPath())) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::path(model) / "config.json", ec)) {
      modelMissing_ = true;
    } else if (!openAsked_) {  // opened at the start of the next frame; entered after it (a failed open: on this model)
      openAsked_ = true;
      app.openModel(model, "");
      return;
    }
  }
  enter(app);
  if (modelMissing_)
    app.message_ = "lesson " + lesson_->name + " step " + std::to_string(step_ + 1) + " needs model " +
                   std::filesystem::path(model).filename().string() + ", which is not installed";
}

void LessonPlayer::enter(App& app) {
  entering_ = false;
  if (!startCaptured_) {
    start_ = app.state();
    startCaptured_ = true;
  }
  const ModelConfig& config = app.session().config();
  warning_.clear();
  app.applyState(stateAtStep(*lesson_, step_, start_, config, &warning_));
  if (!warning_.empty()) app.showMessage(warning_, App::MessageKind::Warning);
  const std::optional<ModelConfig> architecture = architectureAtStep(*lesson_, step_, config);
  int expert = -1;  // the last expert named at or before this step
  for (int s = 0; s <= step_; ++s)
    if (lesson_->steps[s].expert >= 0) expert = lesson_->steps[s].expert;
  PanelCommand command;
  command.architecture = architecture ? &*architecture : nullptr;
  command.expert = expert;
  app.sendCommand(command);
  const LessonStep& step = lesson_->steps[step_];
  std::string tab;  // the last sub-tab named at or before this step for the panel it shows
  for (int s = 0; s <= step_; ++s)
    if (!lesson_->steps[s].tab.empty() && panelOfTab(lesson_->steps[s].tab) == app.state().panel) tab = lesson_->steps[s].tab;
  if (!tab.empty()) app.selectSubTab(tab);
  if (!step.trainPreset.empty()) {
    const TrainingStatus status = app.training_->latest()->status;
    const bool going = trainingPreset_ == step.trainPreset &&
                       (status == TrainingStatus::Preparing || status == TrainingStatus::Running || status == TrainingStatus::Paused);
    if (!going && app.startTraining(step.trainPreset, step.trainSteps)) trainingPreset_ = step.trainPreset;
  }
}

bool LessonPlayer::captureReady(const App& app) const {
  if (entering_ || !lesson_) return !entering_;
  if (!app.requestedSubTab_.empty()) return false;                                 // the step's sub-tab opens on the next frame
  if (app.state().panel == PanelId::Scaling && app.sweeps_->busy()) return false;  // a sweep opening, its laws being fitted
  const LessonStep& step = lesson_->steps[step_];
  const TrainingStatus status = app.training_->latest()->status;
  if (!step.trainPreset.empty() && step.trainSteps > 0)  // the step's own run pauses: wait for it
    return status == TrainingStatus::Paused || status == TrainingStatus::Done || status == TrainingStatus::Error;
  return status != TrainingStatus::Preparing;  // a run that goes on is shot as it goes
}

bool LessonPlayer::handleKeys() {
  if (!lesson_ || !active_) return false;
  const int last = static_cast<int>(lesson_->steps.size()) - 1;
  int target = step_;
  if (isShortcutPressed(Key::PageDown) || isShortcutPressed(Key::Space) || isShortcutPressed(Key::Right) || isShortcutPressed(Key::N))
    target = std::min(last, step_ + 1);
  if (isShortcutPressed(Key::PageUp) || isShortcutPressed(Key::Backspace) || isShortcutPressed(Key::Left) || isShortcutPressed(Key::B))
    target = std::max(0, step_ - 1);
  if (isShortcutPressed(Key::Home)) target = 0;
  if (isShortcutPressed(Key::End)) target = last;
  if (target != step_) goTo(target);
  if (isShortcutPressed(Key::R) || isShortcutPressed(Key::Enter)) revealed_ = true;
  if (isShortcutPressed(Key::Escape)) active_ = false;  // free play; the state stays
  return true;
}

void LessonPlayer::drawPicker(App& app) {
  const float width = ImGui::GetFontSize() * 10;
  sameLineIfFits(width);
  // The combo's own rectangle (while it is open the last item is its popup's).
  const ImVec2 at = ImGui::GetCursorScreenPos();
  app.shared_.regions["lesson_picker"] = {at.x, at.y, at.x + width, at.y + ImGui::GetFrameHeight()};
  ImGui::SetNextItemWidth(width);
  // As tall as the list: every lesson and "Open a lesson file..." in view without scrolling.
  if (ImGui::BeginCombo("##lessons", active_ && lesson_ ? lesson_->title.c_str() : "Lessons", ImGuiComboFlags_HeightLargest)) {
    // Under a header per lecture, the lectures in their order (any other lecture after them).
    const std::vector<std::string> lectures = lectureOrder(lessons_);
    for (size_t i = 0; i < lectures.size(); ++i) {
      const std::string& lecture = lectures[i];
      ImGui::TextDisabled("%s", lecture.c_str());
      recordItem(app.shared_, "lesson_lecture_" + std::to_string(i));
      for (const Lesson& l : lessons_) {
        if (l.lecture != lecture) continue;
        const bool picked = ImGui::Selectable(("   " + l.title + "##" + l.name).c_str(), active_ && lesson_ && lesson_->path == l.path);
        if (ImGui::IsItemHovered() && !l.summary.empty()) ImGui::SetTooltip("%s (%s)", l.summary.c_str(), l.lecture.c_str());
        recordItem(app.shared_, "lesson_pick_" + l.name);
        std::string error;
        if (picked && !start(l.name, 0, &error)) app.message_ = error;
      }
    }
    if (lessons_.empty()) ImGui::TextDisabled("no lessons in %s", lessonsDir_.c_str());
    ImGui::Separator();
    if (ImGui::Selectable("Open a lesson file...")) app.openBrowser(FileBrowser::Purpose::Lesson);
    recordItem(app.shared_, "lesson_browse");
    ImGui::EndCombo();
  }
  if (lesson_ && !active_) {
    const std::string label = "Resume lesson (step " + std::to_string(step_ + 1) + ")";
    sameLineIfFits(label.c_str());
    if (ImGui::Button(label.c_str())) goTo(step_);
    recordItem(app.shared_, "lesson_resume");
  }
}

// The caption's height at the largest text scale (1.3x the UI's, down to 1x) that fits in its
// share of the window: the header row with the buttons, the step title, the caption, the formula,
// the check (question, choices, the Reveal row).
void LessonPlayer::layoutCaption(float width, float maxHeight) {
  const ImGuiStyle& style = ImGui::GetStyle();
  const LessonStep& step = lesson_->steps[step_];
  const float wrap = width - style.WindowPadding.x * 2 - style.ScrollbarSize;
  auto textHeight = [&](const std::string& text, float scale) {
    return ImGui::GetFont()->CalcTextSizeA(ImGui::GetFontSize() * scale, FLT_MAX, wrap, text.c_str()).y;
  };
  for (scale_ = kCaptionScale;; scale_ -= 0.05f) {
    const float frame = ImGui::GetFontSize() * scale_ + style.FramePadding.y * 2;
    float h = frame + textHeight(step.title, scale_) + textHeight(step.caption, scale_);
    int rows = 3;
    if (!step.formula.empty()) h += textHeight(step.formula, scale_ * kFormulaScale), ++rows;
    if (step.check) h += textHeight(step.check->question, scale_) + textHeight(choicesLine(*step.check), scale_) + frame, rows += 3;
    height_ = h + style.ItemSpacing.y * rows + style.WindowPadding.y * 2 + style.ChildBorderSize * 2;
    if (height_ <= maxHeight || scale_ <= 1.0f) break;
  }
}

float LessonPlayer::captionHeight() {
  if (!lesson_ || !active_) return 0;
  layoutCaption(ImGui::GetContentRegionAvail().x, ImGui::GetMainViewport()->WorkSize.y * kMaxCaptionShare);
  return std::min(height_, ImGui::GetMainViewport()->WorkSize.y * kMaxCaptionShare);
}

float LessonPlayer::captionSpace() {
  const float height = captionHeight();
  return height > 0 ? height + ImGui::GetStyle().ItemSpacing.y : 0;
}

// The live answer to the step's check on the snapshot on screen.
void LessonPlayer::reveal(const App& app) {
  const LessonStep& step = lesson_->steps[step_];
  liveAnswer_.clear();
  why_.clear();
  if (!step.check || !app.snapshot()) return;
  revealedFor_ = app.snapshot()->id;
  liveAnswer_ =
      lessonCheckAnswer(*step.check, *app.snapshot(), app.session(), app.state(), architectureAtStep(*lesson_, step_, app.session().config()), &why_);
}

void LessonPlayer::drawCaption(App& app) {
  if (!lesson_) return;
  const LessonStep& step = lesson_->steps[step_];
  nlohmann::json& facts = app.shared_.facts["lesson"];
  if (active_) {
    ImGui::BeginChild("lesson_caption", ImVec2(0, captionHeight()), true);
    ImGui::SetWindowFontScale(scale_);
    const int last = static_cast<int>(lesson_->steps.size()) - 1;
    ImGui::BeginDisabled(step_ == 0);
    if (ImGui::Button("< Prev")) goTo(step_ - 1);
    ImGui::EndDisabled();
    recordItem(app.shared_, "lesson_prev");
    ImGui::SameLine();
    ImGui::BeginDisabled(step_ == last);
    if (ImGui::Button("Next >")) goTo(step_ + 1);
    ImGui::EndDisabled();
    recordItem(app.shared_, "lesson_next");
    ImGui::SameLine();
    ImGui::TextUnformatted(stepHeader(*lesson_, step_).c_str());
    ImGui::TextColored(ImVec4(0.85f, 0.45f, 0.0f, 1.0f), "%s", step.title.c_str());
    ImGui::TextWrapped("%s", step.caption.c_str());
    if (!step.formula.empty()) {
      ImGui::SetWindowFontScale(scale_ * kFormulaScale);
      ImGui::TextWrapped("%s", step.formula.c_str());
      ImGui::SetWindowFontScale(scale_);
    }
    if (step.check) {
      ImGui::TextWrapped("%s", step.check->question.c_str());
      ImGui::TextWrapped("%s", choicesLine(*step.check).c_str());
      if (ImGui::Button("Reveal (R)")) revealed_ = true;
      recordItem(app.shared_, "lesson_reveal");
      if (revealed_ && app.snapshot() && app.snapshot()->id != revealedFor_) reveal(app);
      ImGui::SameLine();
      if (!revealed_) ImGui::TextDisabled("what does the model say?");
      else if (liveAnswer_.empty()) ImGui::TextWrapped("the model cannot say: %s", why_.c_str());
      else
        ImGui::TextWrapped("the model says %s: %s", liveAnswer_.c_str(),
                           liveAnswer_ == step.check->answer ? "as the lesson says" : ("the lesson says " + step.check->answer).c_str());
    }
    // All of it inside the window: nothing cut off at the bottom.
    fits_ = ImGui::GetCursorPosY() - ImGui::GetStyle().ItemSpacing.y <= ImGui::GetWindowHeight() + 0.5f;
    ImGui::EndChild();
    recordItem(app.shared_, "lesson_caption");
    if (auto it = app.shared_.regions.find(step.highlight); !step.highlight.empty() && it != app.shared_.regions.end()) {
      const float pad = ImGui::GetFontSize() * 0.2f;
      ImGui::GetForegroundDrawList()->AddRect(ImVec2(it->second.x0 - pad, it->second.y0 - pad), ImVec2(it->second.x1 + pad, it->second.y1 + pad),
                                              kHighlight, pad, 0, pad * 1.5f);
      facts["highlighted"] = step.highlight;
    }
  }
  facts.update({{"name", lesson_->name},
                {"active", active_},
                {"step", step_},
                {"steps", lesson_->steps.size()},
                {"title", step.title},
                {"revealed", revealed_},
                {"highlight", step.highlight},
                {"live_answer", liveAnswer_},
                {"answer", step.check ? step.check->answer : ""},
                {"model_missing", modelMissing_},
                {"warning", warning_},
                {"entering", entering_},
                {"has_check", step.check.has_value()},
                {"caption_fits", fits_},
                {"scale", scale_}});
}

}  // namespace tscope::gui
