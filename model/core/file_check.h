// Files the user names, checked before anything opens them: a directory, a symbolic-link loop, a
// FIFO (opening one waits for a writer that never comes), a device or a socket is refused in one
// line naming the file, instead of an internal error or a wait without end.
#pragma once
#include <string>

namespace tscope {

// Throws tscope::Error "PATH: <why>" when `path` is a directory, a FIFO, a device, a socket or a
// loop of symbolic links. A missing or unreadable path passes: the reader's own open names it.
// `what` names it in the line ("the lesson file", "a text file"); may be empty.
void requireRegularFile(const std::string& path, const std::string& what = "");

// Whether anything is at `path` (lstat: a dangling or looping symbolic link counts, and is then
// refused by requireRegularFile with its reason). Never throws.
bool somethingAt(const std::string& path);

}  // namespace tscope
