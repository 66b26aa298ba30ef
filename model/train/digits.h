// The UCI handwritten digits (Alpaydin and Kaynak, 1998) as python3-sklearn ships them
// (sklearn/datasets/data/digits.csv.gz; the set-up unpacks it into .cache/data/digits.csv): 1,797
// images of 8x8 pixels, each pixel the count (0..16) of ink in a 4x4 block of a 32x32 bitmap, bright
// ink on black, and the digit drawn. The Vision Transformer's data (docs/VISION.md): a fixed
// train / test split, images as digits-vit reads them, small shifts as augmentation, and the
// logistic-regression baseline the shipped model is measured against.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/core/rng.h"
#include "model/io/image.h"
#include "model/train/trainer.h"

namespace tscope {

constexpr int kDigitSide = 8;     // pixels per side
constexpr int kDigitLevels = 16;  // a pixel's largest value
constexpr int kDigitClasses = 10;

struct DigitsData {
  std::vector<uint8_t> pixels;  // (N, 64) 0..16, row by row
  std::vector<int> labels;      // (N) 0..9
  size_t size() const { return labels.size(); }
};

// Parses the CSV (65 integers a line: 64 pixels, then the label). Throws tscope::Error naming
// `name`, the line and the problem.
DigitsData parseDigitsCsv(const std::string& text, const std::string& name);
// path "" = defaultDigitsPath(); throws with the set-up's command when the file is not there.
DigitsData loadDigits(const std::string& path = "");
// $TSCOPE_DIGITS_CSV, else the set-up's .cache/data/digits.csv ("" when neither exists).
std::string defaultDigitsPath();

// The fixed split: the indices shuffled by a seeded Rng (seed kDigitsSplitSeed), the last 20% (360 of
// 1,797) held out as the test set (359 of 1,797), the rest (1,438) for training. The same on every machine.
constexpr uint64_t kDigitsSplitSeed = 20261201;
struct DigitsSplit {
  std::vector<int> train, test;
};
DigitsSplit digitsSplit(size_t count);

// Image `index` as digits-vit reads it, (1, 8, 8) floats = pixel / 16, shifted by (dx, dy) pixels
// (ink moved right / down; what leaves the frame is lost, what enters is 0).
void digitImage(const DigitsData& data, size_t index, float* out, int dx = 0, int dy = 0);

// How any picture becomes a digit as the data set has it (saved as digits-vit's
// preprocessor_config.json): grey, inverted when light (dark ink on paper), resized to 8x8, each pixel
// a count 0..16, divided by 16.
ImagePreprocessing digitsPreprocessing();

// Multinomial logistic regression on the 64 pixels / 16 (full-batch gradient descent on the mean
// cross-entropy plus an L2 penalty, from zeros: deterministic), the baseline beside digits-vit.
struct DigitsBaseline {
  double trainAccuracy = 0, testAccuracy = 0;
  int epochs = 0;
  double l2 = 0;
};
DigitsBaseline logisticRegressionBaseline(const DigitsData& data, const DigitsSplit& split);

// The training data of an image model on the digits: each sequence is one image (inputs
// imageTokenIds, the target at [CLS] its label, the only one scored), training images drawn at random
// and shifted by -1, 0 or +1 pixels on each axis with probability `shiftProbability`; validation batch i
// covers test images i*B .. i*B+B-1 (past the end: not scored). seqLen is the model's n_positions
// (1 + patches: 65, 17, 5 or 2 for patches of 1, 2, 4 or 8 pixels); any other throws tscope::Error.
std::unique_ptr<DataSource> makeDigitsSource(int seqLen, double shiftProbability = 0.5);

}  // namespace tscope
