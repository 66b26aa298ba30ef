// RAII OpenGL objects (move-only) and a GL error check that reports file and line.
// GL 3.3 core entry points come from libGL with GL_GLEXT_PROTOTYPES (Linux/glvnd exports them).
#pragma once
#include <GL/gl.h>
#include <GL/glext.h>

#include <string>
#include <utility>

namespace tscope::gui {

// Throws std::runtime_error naming the call site if GL reported an error since the last check.
void checkGl(const char* file, int line);
#define TSCOPE_CHECK_GL() ::tscope::gui::checkGl(__FILE__, __LINE__)

template <typename Deleter>
class GlHandle {
 public:
  GlHandle() = default;
  explicit GlHandle(GLuint id) : id_(id) {}
  ~GlHandle() { reset(); }
  GlHandle(GlHandle&& other) noexcept : id_(std::exchange(other.id_, 0)) {}
  GlHandle& operator=(GlHandle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  GlHandle(const GlHandle&) = delete;
  GlHandle& operator=(const GlHandle&) = delete;
  GLuint id() const { return id_; }
  explicit operator bool() const { return id_ != 0; }
  void reset() {
    if (id_) Deleter{}(id_);
    id_ = 0;
  }

 private:
  GLuint id_ = 0;
};

struct TextureDeleter {
  void operator()(GLuint id) const { glDeleteTextures(1, &id); }
};
struct FramebufferDeleter {
  void operator()(GLuint id) const { glDeleteFramebuffers(1, &id); }
};
struct ProgramDeleter {
  void operator()(GLuint id) const { glDeleteProgram(id); }
};
struct VertexArrayDeleter {
  void operator()(GLuint id) const { glDeleteVertexArrays(1, &id); }
};

using Texture = GlHandle<TextureDeleter>;
using Framebuffer = GlHandle<FramebufferDeleter>;
using Program = GlHandle<ProgramDeleter>;
using VertexArray = GlHandle<VertexArrayDeleter>;

Texture makeTexture();
Framebuffer makeFramebuffer();
VertexArray makeVertexArray();
// Compiles and links; throws std::runtime_error with the GLSL log on failure.
Program makeProgram(const char* vertexSource, const char* fragmentSource, const std::string& name);

}  // namespace tscope::gui
