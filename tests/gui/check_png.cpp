// Pixel checks for the GUI tests: loads a screenshot (stb_image) and asserts that a region is not
// blank, not uniform, or differs from the same region of another screenshot. Regions come from
// the JSON tscope --screenshot prints ({"regions": {"name": [x0, y0, x1, y1]}}).
// usage: check_png IMAGE [--json FILE --region NAME] (--not-blank | --not-uniform | --differs OTHER)
#include <stb_image.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace {

struct Image {
  int width = 0, height = 0;
  unsigned char* pixels = nullptr;
  explicit Image(const std::string& path) { pixels = stbi_load(path.c_str(), &width, &height, nullptr, 3); }
  ~Image() { stbi_image_free(pixels); }
  const unsigned char* at(int x, int y) const { return pixels + ((size_t)y * width + x) * 3; }
};

int fail(const std::string& message) {
  std::fprintf(stderr, "check_png: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return fail("usage: check_png IMAGE [--json FILE --region NAME] (--not-blank | --not-uniform | --differs OTHER)");
  const std::string path = argv[1];
  std::string json, region, mode, other;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) json = argv[++i];
    else if (arg == "--region" && i + 1 < argc) region = argv[++i];
    else if (arg == "--differs" && i + 1 < argc) {
      mode = "differs";
      other = argv[++i];
    } else if (arg == "--not-blank" || arg == "--not-uniform") mode = arg.substr(2);
    else return fail("unknown argument " + arg);
  }
  Image image(path);
  if (!image.pixels) return fail(path + ": cannot read the PNG");
  int x0 = 0, y0 = 0, x1 = image.width, y1 = image.height;
  if (!json.empty()) {
    std::ifstream in(json);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      return fail(json + ": " + e.what());
    }
    if (!j["regions"].contains(region)) return fail(json + ": no region '" + region + "' (the panel did not draw it)");
    const auto r = j["regions"][region];
    x0 = std::max(0, (int)r[0].get<double>());
    y0 = std::max(0, (int)r[1].get<double>());
    x1 = std::min(image.width, (int)r[2].get<double>());
    y1 = std::min(image.height, (int)r[3].get<double>());
    if (x1 - x0 < 4 || y1 - y0 < 4) return fail("region '" + region + "' is empty");
  }
  double sum = 0, sumSquares = 0;
  std::set<unsigned> colours;
  const size_t count = (size_t)(x1 - x0) * (y1 - y0);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const unsigned char* p = image.at(x, y);
      const double luminance = 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
      sum += luminance;
      sumSquares += luminance * luminance;
      colours.insert((unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2]);
    }
  const double mean = sum / count, deviation = std::sqrt(std::max(0.0, sumSquares / count - mean * mean));
  std::printf("%s [%d,%d..%d,%d]: mean luminance %.1f, deviation %.1f, %zu colours\n", path.c_str(), x0, y0, x1, y1, mean, deviation, colours.size());
  if (mode == "not-blank") return deviation > 2.0 && colours.size() >= 3 ? 0 : fail("region is blank");
  if (mode == "not-uniform") return deviation > 8.0 && colours.size() >= 8 ? 0 : fail("region is (nearly) uniform");
  if (mode == "differs") {
    Image second(other);
    if (!second.pixels) return fail(other + ": cannot read the PNG");
    if (second.width != image.width || second.height != image.height) return fail("the two screenshots differ in size");
    size_t changed = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const unsigned char *a = image.at(x, y), *b = second.at(x, y);
        if (std::abs(a[0] - b[0]) + std::abs(a[1] - b[1]) + std::abs(a[2] - b[2]) > 12) ++changed;
      }
    std::printf("%.1f%% of the region's pixels changed\n", 100.0 * changed / count);
    return changed > count / 50 ? 0 : fail("the region did not change");
  }
  return fail("no check given");
}
