// GL object creation and error reporting.
#include "app/gui/gfx.h"

#include <stdexcept>
#include <vector>

namespace tscope::gui {

void checkGl(const char* file, int line) {
  const GLenum error = glGetError();
  if (error == GL_NO_ERROR) return;
  while (glGetError() != GL_NO_ERROR) {
  }
  throw std::runtime_error(std::string("OpenGL error 0x") + std::to_string(error) + " at " + file + ":" + std::to_string(line));
}

Texture makeTexture() {
  GLuint id = 0;
  glGenTextures(1, &id);
  return Texture(id);
}

Framebuffer makeFramebuffer() {
  GLuint id = 0;
  glGenFramebuffers(1, &id);
  return Framebuffer(id);
}

VertexArray makeVertexArray() {
  GLuint id = 0;
  glGenVertexArrays(1, &id);
  return VertexArray(id);
}

namespace {
GLuint compile(GLenum kind, const char* source, const std::string& name) {
  const GLuint shader = glCreateShader(kind);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    GLint length = 0;
    glGetShaderiv(shader, GL_INFO_LOG_LENGTH, &length);
    std::vector<char> log(length + 1, '\0');
    glGetShaderInfoLog(shader, length, nullptr, log.data());
    glDeleteShader(shader);
    throw std::runtime_error("shader " + name + " does not compile: " + log.data());
  }
  return shader;
}
}  // namespace

Program makeProgram(const char* vertexSource, const char* fragmentSource, const std::string& name) {
  const GLuint vertex = compile(GL_VERTEX_SHADER, vertexSource, name + " (vertex)");
  GLuint fragment = 0;
  try {
    fragment = compile(GL_FRAGMENT_SHADER, fragmentSource, name + " (fragment)");
  } catch (...) {
    glDeleteShader(vertex);
    throw;
  }
  Program program(glCreateProgram());
  glAttachShader(program.id(), vertex);
  glAttachShader(program.id(), fragment);
  glLinkProgram(program.id());
  glDeleteShader(vertex);
  glDeleteShader(fragment);
  GLint ok = 0;
  glGetProgramiv(program.id(), GL_LINK_STATUS, &ok);
  if (!ok) {
    GLint length = 0;
    glGetProgramiv(program.id(), GL_INFO_LOG_LENGTH, &length);
    std::vector<char> log(length + 1, '\0');
    glGetProgramInfoLog(program.id(), length, nullptr, log.data());
    throw std::runtime_error("shader program " + name + " does not link: " + log.data());
  }
  TSCOPE_CHECK_GL();
  return program;
}

}  // namespace tscope::gui
