#version 330 core
// A quad covering the viewport, generated from gl_VertexID (no vertex buffer needed).
out vec2 uv;
void main() {
  vec2 corner = vec2(float(gl_VertexID & 1), float((gl_VertexID >> 1) & 1));
  // Texel row 0 of the output is the data's row 0, so ImGui::Image with uv (0,0)-(1,1) shows
  // row 0 at the top.
  uv = corner;
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
