# Turns shaders/*.vert|frag into a C++ header of raw string literals (run at build time), so the
# app finds its shaders wherever it is started from.
file(GLOB shader_files ${SHADER_DIR}/*.vert ${SHADER_DIR}/*.frag)
set(content "// Generated from shaders/ by app/gui/embed_shaders.cmake; do not edit.\n#pragma once\n\n")
foreach(file ${shader_files})
  get_filename_component(name ${file} NAME)
  string(REPLACE "." "_" symbol ${name})
  file(READ ${file} source)
  string(APPEND content "inline constexpr const char* kShader_${symbol} = R\"glsl(${source})glsl\";\n")
endforeach()
file(WRITE ${OUTPUT}.tmp "${content}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
