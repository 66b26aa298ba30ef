// The handwritten digits (digits.h): the CSV, the fixed split, augmentation, the logistic-regression
// baseline and the image model's DataSource.
#include "model/train/digits.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/core/config.h"
#include "model/core/error.h"
#include "model/io/npy.h"
#include "model/tokenize/tokenizer.h"

namespace tscope {

namespace fs = std::filesystem;

DigitsData parseDigitsCsv(const std::string& text, const std::string& name) {
  DigitsData data;
  std::istringstream lines(text);
  std::string line;
  int lineNumber = 0;
  while (std::getline(lines, line)) {
    ++lineNumber;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = name + ":" + std::to_string(lineNumber) + ": ";
    std::vector<int> values;
    size_t at = 0;
    while (at <= line.size()) {
      const size_t comma = std::min(line.size(), line.find(',', at));
      const std::string cell = line.substr(at, comma - at);
      char* end = nullptr;
      const long value = std::strtol(cell.c_str(), &end, 10);
      if (cell.empty() || *end != '\0') throw Error(where + "\"" + cell.substr(0, 20) + "\" is not an integer");
      if (values.size() == 64 ? (value < 0 || value >= kDigitClasses) : (value < 0 || value > kDigitLevels))
        throw Error(where + (values.size() == 64 ? "the label must be 0..9" : "a pixel must be 0..16") + " (got " + std::to_string(value) + ")");
      values.push_back(static_cast<int>(value));
      if (values.size() > 65) throw Error(where + "more than 65 values (64 pixels and the label)");
      at = comma + 1;
    }
    if (values.size() != 65) throw Error(where + std::to_string(values.size()) + " values; a digit is 64 pixels and the label");
    data.pixels.insert(data.pixels.end(), values.begin(), values.begin() + 64);
    data.labels.push_back(values[64]);
  }
  if (data.size() < 10) throw Error(name + ": " + std::to_string(data.size()) + " digits; the data set has 1797");
  return data;
}

std::string defaultDigitsPath() {
  if (const char* env = std::getenv("TSCOPE_DIGITS_CSV"); env && *env) return env;
  const fs::path installed = fs::path(TSCOPE_SOURCE_DIR) / ".cache" / "data" / "digits.csv";
  return fs::exists(installed) ? installed.string() : "";
}

DigitsData loadDigits(const std::string& pathIn) {
  const std::string path = pathIn.empty() ? defaultDigitsPath() : pathIn;
  if (path.empty()) throw Error("the handwritten digits are not installed: run bash scripts/setup.sh (it unpacks them from python3-sklearn)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the digits");
  std::stringstream contents;
  contents << in.rdbuf();
  return parseDigitsCsv(contents.str(), path);
}

DigitsSplit digitsSplit(size_t count) {
  std::vector<int> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = static_cast<int>(i);
  Rng rng(kDigitsSplitSeed);
  for (size_t i = count; i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);  // Fisher-Yates
  const size_t test = count / 5;
  DigitsSplit split;
  split.train.assign(order.begin(), order.end() - test);
  split.test.assign(order.end() - test, order.end());
  return split;
}

void digitImage(const DigitsData& data, size_t index, float* out, int dx, int dy) {
  const uint8_t* pixels = data.pixels.data() + index * 64;
  for (int y = 0; y < kDigitSide; ++y)
    for (int x = 0; x < kDigitSide; ++x) {
      const int sx = x - dx, sy = y - dy;
      const bool inside = sx >= 0 && sx < kDigitSide && sy >= 0 && sy < kDigitSide;
      out[y * kDigitSide + x] = inside ? pixels[sy * kDigitSide + sx] / static_cast<float>(kDigitLevels) : 0.0f;
    }
}

namespace {

// Softmax regression's class scores for one image (64 pixels / 16) with weights w (10, 65): bias last.
void scores(const std::vector<double>& w, const float* image, double* out) {
  for (int k = 0; k < kDigitClasses; ++k) {
    const double* row = w.data() + k * 65;
    double s = row[64];
    for (int i = 0; i < 64; ++i) s += row[i] * image[i];
    out[k] = s;
  }
}

double accuracyOf(const std::vector<double>& w, const DigitsData& data, const std::vector<int>& indices) {
  float image[64];
  double s[kDigitClasses];
  int hits = 0;
  for (int index : indices) {
    digitImage(data, index, image);
    scores(w, image, s);
    hits += std::max_element(s, s + kDigitClasses) - s == data.labels[index];
  }
  return indices.empty() ? 0.0 : hits / static_cast<double>(indices.size());
}

}  // namespace

DigitsBaseline logisticRegressionBaseline(const DigitsData& data, const DigitsSplit& split) {
  DigitsBaseline report;
  report.epochs = 2000;  // converged: the training accuracy stops rising (about 98%)
  report.l2 = 1e-3;
  const double lr = 2.0;
  std::vector<double> w(kDigitClasses * 65, 0.0), grad(w.size());
  float image[64];
  double s[kDigitClasses];
  for (int epoch = 0; epoch < report.epochs; ++epoch) {
    std::fill(grad.begin(), grad.end(), 0.0);
    for (int index : split.train) {
      digitImage(data, index, image);
      scores(w, image, s);
      const double top = *std::max_element(s, s + kDigitClasses);
      double sum = 0;
      for (double& v : s) sum += (v = std::exp(v - top));
      for (int k = 0; k < kDigitClasses; ++k) {
        const double d = s[k] / sum - (k == data.labels[index]);
        double* g = grad.data() + k * 65;
        for (int i = 0; i < 64; ++i) g[i] += d * image[i];
        g[64] += d;
      }
    }
    const double n = static_cast<double>(split.train.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * (grad[i] / n + ((i % 65) == 64 ? 0.0 : report.l2 * w[i]));
  }
  report.trainAccuracy = accuracyOf(w, data, split.train);
  report.testAccuracy = accuracyOf(w, data, split.test);
  return report;
}

ImagePreprocessing digitsPreprocessing() {
  ImagePreprocessing p;
  p.width = p.height = kDigitSide;
  p.levels = kDigitLevels;
  p.doRescale = true;
  p.rescaleFactor = 1.0 / kDigitLevels;
  p.doNormalize = false;
  p.invertWhenLight = true;
  return p;
}

namespace {

class DigitsSource final : public DataSource {
 public:
  DigitsSource(int patchSize, double shiftProbability) : data_(loadDigits()), split_(digitsSplit(data_.size())), shiftProbability_(shiftProbability) {
    std::vector<std::string> labels;
    for (int k = 0; k < kDigitClasses; ++k) labels.push_back(std::to_string(k));
    tokenizer_ = makeLabelTokenizer(labels);
    config_.image_size = kDigitSide;
    config_.patch_size = patchSize;
    config_.num_channels = 1;
  }
  int vocabSize() const override { return kDigitClasses; }
  int sequenceLength() const override { return 1 + config_.numPatches(); }
  void trainBatch(int batch, Rng& rng, int* inputs, int* targets, uint8_t* scored) override {
    images_.assign((size_t)batch * 64, 0.0f);
    for (int b = 0; b < batch; ++b) {
      const int index = split_.train[rng.next() % split_.train.size()];
      int dx = 0, dy = 0;
      if (rng.uniform() < shiftProbability_) {
        dx = static_cast<int>(rng.next() % 3) - 1;
        dy = static_cast<int>(rng.next() % 3) - 1;
      }
      digitImage(data_, index, images_.data() + (size_t)b * 64, dx, dy);
      fillSequence(b, data_.labels[index], true, inputs, targets, scored);
    }
  }
  void validationBatch(int batch, int index, int* inputs, int* targets, uint8_t* scored) override {
    images_.assign((size_t)batch * 64, 0.0f);
    for (int b = 0; b < batch; ++b) {
      const size_t at = (size_t)index * batch + b;
      const bool inside = at < split_.test.size();
      if (inside) digitImage(data_, split_.test[at], images_.data() + (size_t)b * 64);
      fillSequence(b, inside ? data_.labels[split_.test[at]] : 0, inside, inputs, targets, scored);
    }
  }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  void saveTokenizer(const std::string& dir) const override {
    saveLabelTokenizer(*tokenizer_, (fs::path(dir) / "labels.json").string());
    writeFileAtomically((fs::path(dir) / "preprocessor_config.json").string(), preprocessorConfigJson(digitsPreprocessing()).dump(2) + "\n");
  }
  std::vector<int> probeSequence() const override { return imageTokenIds(config_); }
  std::vector<float> probeImage() const override {
    std::vector<float> image(64);
    digitImage(data_, split_.test.front(), image.data());
    return image;
  }
  const std::vector<float>& lastImages() const override { return images_; }
  std::string describe() const override {
    return "digits: " + std::to_string(split_.train.size()) + " training and " + std::to_string(split_.test.size()) +
           " test images of 8x8 pixels (UCI, from python3-sklearn), shifted by a pixel half the time";
  }

 private:
  void fillSequence(int b, int label, bool counted, int* inputs, int* targets, uint8_t* scored) const {
    const int T = sequenceLength();
    const std::vector<int> ids = imageTokenIds(config_);
    for (int t = 0; t < T; ++t) {
      inputs[(size_t)b * T + t] = ids[t];
      targets[(size_t)b * T + t] = t == 0 ? label : 0;
      scored[(size_t)b * T + t] = t == 0 && counted;
    }
  }
  DigitsData data_;
  DigitsSplit split_;
  double shiftProbability_;
  ModelConfig config_;  // the image shape the source makes (8x8, one channel, 2x2 patches)
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<float> images_;
};

}  // namespace

std::unique_ptr<DataSource> makeDigitsSource(int seqLen, double shiftProbability) {
  for (int patch : {1, 2, 4, 8})
    if (seqLen == 1 + (kDigitSide / patch) * (kDigitSide / patch)) return std::make_unique<DigitsSource>(patch, shiftProbability);
  throw Error("data spec: the digits are 8x8 images, so a sequence is [CLS] and 64, 16, 4 or 1 patches (T = 65, 17, 5 or 2), not T = " +
              std::to_string(seqLen));
}

}  // namespace tscope
