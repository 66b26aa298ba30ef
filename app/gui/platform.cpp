// GLFW + OpenGL 3.3 + ImGui set-up, a crisp TrueType font (DejaVu Sans from Debian's
// fonts-dejavu-core) rasterised at the final size rather than scaled, the two themes, and PNG
// capture through stb_image_write.
#include "app/gui/platform.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "app/gui/gfx.h"
#include "app/gui/glyph_ranges.h"

namespace tscope::gui {

namespace {
std::string glfwErrorText;
void onGlfwError(int, const char* description) { glfwErrorText = description ? description : "unknown"; }

const char* kFontCandidates[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf",
                                 "/usr/share/fonts/dejavu/DejaVuSans.ttf"};

static_assert(sizeof(ImWchar) == sizeof(kFontGlyphRanges[0]), "the glyph ranges are ImWchar16");

// Presses since the last frame: for each GLFW key, a bit per modifier combination seen.
std::array<uint16_t, GLFW_KEY_LAST + 1> pressedSinceLastFrame{};

void onKey(GLFWwindow* window, int key, int scancode, int action, int mods) {
  if (key >= 0 && key <= GLFW_KEY_LAST && (action == GLFW_PRESS || action == GLFW_REPEAT))
    pressedSinceLastFrame[key] |= static_cast<uint16_t>(1u << (mods & (GLFW_MOD_SHIFT | GLFW_MOD_CONTROL | GLFW_MOD_ALT)));
  ImGui_ImplGlfw_KeyCallback(window, key, scancode, action, mods);  // ImGui's own handling
}
}  // namespace

bool isShortcutPressed(Key key, int mods, int digitOffset) {
  int code = 0;
  switch (key) {
    case Key::Left: code = GLFW_KEY_LEFT; break;
    case Key::Right: code = GLFW_KEY_RIGHT; break;
    case Key::Up: code = GLFW_KEY_UP; break;
    case Key::Down: code = GLFW_KEY_DOWN; break;
    case Key::A: code = GLFW_KEY_A; break;
    case Key::E: code = GLFW_KEY_E; break;
    case Key::G: code = GLFW_KEY_G; break;
    case Key::L: code = GLFW_KEY_L; break;
    case Key::P: code = GLFW_KEY_P; break;
    case Key::Q: code = GLFW_KEY_Q; break;
    case Key::S: code = GLFW_KEY_S; break;
    case Key::T: code = GLFW_KEY_T; break;
    case Key::F1: code = GLFW_KEY_F1; break;
    case Key::Slash: code = GLFW_KEY_SLASH; break;
    case Key::Equal: code = GLFW_KEY_EQUAL; break;
    case Key::Minus: code = GLFW_KEY_MINUS; break;
    case Key::Digit1: code = GLFW_KEY_1 + digitOffset; break;
    case Key::PageUp: code = GLFW_KEY_PAGE_UP; break;
    case Key::PageDown: code = GLFW_KEY_PAGE_DOWN; break;
    case Key::Space: code = GLFW_KEY_SPACE; break;
    case Key::Home: code = GLFW_KEY_HOME; break;
    case Key::End: code = GLFW_KEY_END; break;
    case Key::Escape: code = GLFW_KEY_ESCAPE; break;
    case Key::Backspace: code = GLFW_KEY_BACKSPACE; break;
    case Key::N: code = GLFW_KEY_N; break;
    case Key::B: code = GLFW_KEY_B; break;
    case Key::R: code = GLFW_KEY_R; break;
    case Key::Enter: code = GLFW_KEY_ENTER; break;
    case Key::O: code = GLFW_KEY_O; break;
    case Key::C: code = GLFW_KEY_C; break;
    case Key::V: code = GLFW_KEY_V; break;
  }
  // Our bits and GLFW's agree: shift 1, control 2, alt 4.
  static_assert(kShift == GLFW_MOD_SHIFT && kCtrl == GLFW_MOD_CONTROL && kAlt == GLFW_MOD_ALT);
  return code >= 0 && code <= GLFW_KEY_LAST && (pressedSinceLastFrame[code] >> (mods & 7)) & 1u;
}

Platform::Platform(const PlatformOptions& options) {
  glfwSetErrorCallback(onGlfwError);
  if (!glfwInit()) throw std::runtime_error("cannot open a window: no display (" + glfwErrorText + "); set DISPLAY or run under xvfb-run");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  session::WindowPlace place{0, 0, options.width, options.height, false};
  if (options.fitToScreen) {
    session::WindowPlace area{0, 0, 1600, 1000, false};  // no monitor reported: the old default
    if (GLFWmonitor* monitor = glfwGetPrimaryMonitor()) glfwGetMonitorWorkarea(monitor, &area.x, &area.y, &area.width, &area.height);
    if (area.width < 320 || area.height < 240) area = {0, 0, 1600, 1000, false};
    place = session::fitWindow(options.place, area);
  }
  // A fitted place is in screen coordinates already; a --window size is scaled to the monitor.
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, options.fitToScreen ? GLFW_FALSE : GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, options.fitToScreen ? GLFW_FALSE : GLFW_TRUE);  // shown once placed
  window_ = glfwCreateWindow(place.width, place.height, "tscope", nullptr, nullptr);
  if (!window_) {
    glfwTerminate();
    throw std::runtime_error("cannot create an OpenGL 3.3 window (" + glfwErrorText + ")");
  }
  if (options.fitToScreen) {
    glfwSetWindowPos(window_, place.x, place.y);
    if (place.maximized) glfwMaximizeWindow(window_);
    glfwShowWindow(window_);
  }
  glfwMakeContextCurrent(window_);
  glfwSwapInterval(1);
  float xscale = 1, yscale = 1;
  glfwGetWindowContentScale(window_, &xscale, &yscale);
  contentScale_ = std::max(1.0f, xscale);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // layout is part of the session file, not imgui.ini
  ImGui_ImplGlfw_InitForOpenGL(window_, true);
  glfwSetKeyCallback(window_, onKey);  // replaces ImGui's, which onKey calls
  ImGui_ImplOpenGL3_Init("#version 330 core");
  applyStyle(options.fontScale, options.projector);
}

session::WindowPlace Platform::windowPlace() const {
  session::WindowPlace place;
  glfwGetWindowPos(window_, &place.x, &place.y);
  glfwGetWindowSize(window_, &place.width, &place.height);
  place.maximized = glfwGetWindowAttrib(window_, GLFW_MAXIMIZED) == GLFW_TRUE;
  return place;
}

Platform::~Platform() {
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

void Platform::applyStyle(float fontScale, bool projector) {
  if (fontScale == appliedFontScale_ && (projector ? 1.0f : 0.0f) == appliedProjector_) return;
  appliedFontScale_ = fontScale;
  appliedProjector_ = projector ? 1.0f : 0.0f;
  ImGuiStyle style;
  if (projector) {
    ImGui::StyleColorsLight(&style);
    style.Colors[ImGuiCol_Text] = ImVec4(0, 0, 0, 1);
    style.Colors[ImGuiCol_WindowBg] = ImVec4(1, 1, 1, 1);
    style.FrameBorderSize = 1.0f;
  } else {
    ImGui::StyleColorsDark(&style);
  }
  const float scale = contentScale_ * fontScale;
  style.ScaleAllSizes(scale);
  ImGui::GetStyle() = style;
  // Rasterise the font at its final pixel size (crisp at 1.5-3x on a projector).
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  const float pixels = 16.0f * scale;
  bool loaded = false;
  for (const char* path : kFontCandidates) {
    if (std::filesystem::exists(path) && io.Fonts->AddFontFromFileTTF(path, pixels, nullptr, kFontGlyphRanges)) {
      loaded = true;
      break;
    }
  }
  if (!loaded) {
    ImFontConfig config;
    config.SizePixels = pixels;
    io.Fonts->AddFontDefault(&config);
  }
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
}

bool Platform::shouldClose() const { return glfwWindowShouldClose(window_); }

void Platform::waitForEvents(double seconds) {
  pressedSinceLastFrame.fill(0);
  glfwWaitEventsTimeout(seconds);
  waited_ = true;
}

void Platform::beginFrame() {
  if (!waited_) {
    pressedSinceLastFrame.fill(0);
    glfwPollEvents();
  }
  waited_ = false;
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (mouseHidden_) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
  ImGui::NewFrame();
}

void Platform::renderOnly() {
  ImGui::Render();
  int width = 0, height = 0;
  glfwGetFramebufferSize(window_, &width, &height);
  glViewport(0, 0, width, height);
  const ImVec4 clear = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
  glClearColor(clear.x, clear.y, clear.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  TSCOPE_CHECK_GL();
}

void Platform::finish() { glFinish(); }

void Platform::swap() { glfwSwapBuffers(window_); }

void Platform::setSwapInterval(int interval) { glfwSwapInterval(interval); }

void Platform::endFrame() {
  renderOnly();
  glfwSwapBuffers(window_);
}

void Platform::saveScreenshot(const std::string& path, float x0, float y0, float x1, float y1) const {
  int width = 0, height = 0, windowWidth = 0, windowHeight = 0;
  glfwGetFramebufferSize(window_, &width, &height);
  glfwGetWindowSize(window_, &windowWidth, &windowHeight);
  std::vector<unsigned char> pixels((size_t)width * height * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  TSCOPE_CHECK_GL();
  // GL's rows run bottom to top: flip, force opaque alpha, and crop (window -> framebuffer pixels).
  const float scale = windowWidth > 0 ? static_cast<float>(width) / windowWidth : 1.0f;
  int left = 0, top = 0, cropWidth = width, cropHeight = height;
  if (x1 > x0 && y1 > y0) {
    left = std::clamp(static_cast<int>(x0 * scale), 0, width - 1);
    top = std::clamp(static_cast<int>(y0 * scale), 0, height - 1);
    cropWidth = std::clamp(static_cast<int>((x1 - x0) * scale), 1, width - left);
    cropHeight = std::clamp(static_cast<int>((y1 - y0) * scale), 1, height - top);
  }
  std::vector<unsigned char> image((size_t)cropWidth * cropHeight * 4);
  for (int y = 0; y < cropHeight; ++y) {
    const unsigned char* source = pixels.data() + ((size_t)(height - 1 - (top + y)) * width + left) * 4;
    std::copy(source, source + (size_t)cropWidth * 4, image.data() + (size_t)y * cropWidth * 4);
  }
  for (size_t i = 3; i < image.size(); i += 4) image[i] = 255;
  const std::string temporary = path + ".tmp.png";
  if (!stbi_write_png(temporary.c_str(), cropWidth, cropHeight, 4, image.data(), cropWidth * 4))
    throw std::runtime_error(path + ": cannot write the PNG");
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw std::runtime_error(path + ": " + ec.message());
}

}  // namespace tscope::gui
