// requireRegularFile: stat() follows symbolic links and never blocks (open() on a FIFO would).
#include "model/core/file_check.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "model/core/error.h"

namespace tscope {

void requireRegularFile(const std::string& path, const std::string& what) {
  const std::string name = path + (what.empty() ? "" : " (" + what + ")");
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) {
    // A missing or unreadable file is left to the reader's own open, which names it; a loop is named here.
    if (errno == ELOOP) throw Error(name + ": a loop of symbolic links, not a file (" + std::strerror(ELOOP) + ")");
    return;
  }
  if (S_ISREG(status.st_mode)) return;
  const char* kind = S_ISDIR(status.st_mode)                              ? "is a directory"
                     : S_ISFIFO(status.st_mode)                           ? "is a FIFO (named pipe)"
                     : S_ISSOCK(status.st_mode)                           ? "is a socket"
                     : S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode) ? "is a device"
                                                                          : "is something else";
  throw Error(name + ": " + kind + ", not a regular file");
}

bool somethingAt(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0;
}

}  // namespace tscope
