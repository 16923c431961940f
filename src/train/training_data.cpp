#include "torchperf/train/training_data.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/upsampling.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "torchperf/error.h"
#include "torchperf/feed/inputs.h"
#include "torchperf/models/builtin_models.h"
#include "torchperf/train/image_codec.h"

namespace torchperf {
namespace {

namespace fs = std::filesystem;

// splitmix64: each synthetic image is a pure function of (seed, index), so loader threads need
// no shared generator and every configuration sees the same data.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Like the guide's FakeCIFAR: 32x32 RGB bytes and a label among 10, 50 000 of them.
class SyntheticCifar final : public TrainingData {
 public:
  SyntheticCifar(int size, std::uint64_t seed) : size_(size), seed_(seed) {}
  std::size_t size() const override { return 50000; }
  std::string describe() const override {
    return "synthetic-cifar: 50000 random 32x32 RGB images, 10 classes, resized to " +
           std::to_string(size_) + "x" + std::to_string(size_);
  }
  std::int64_t classes() const override { return 10; }
  bool uint8_images() const override { return true; }
  Example get(std::size_t index, Transfer transfer) const override {
    std::uint8_t pixels[32 * 32 * 3];
    std::uint64_t state = mix(seed_ * 0x100000001B3ULL + index);
    for (std::size_t i = 0; i < sizeof(pixels); i += 8) {
      state = mix(state);
      std::memcpy(pixels + i, &state, 8);
    }
    const auto label = static_cast<std::int64_t>(mix(state) % 10);
    return {prepare_image(pixels, 32, 32, size_, transfer), at::scalar_tensor(label, at::kLong)};
  }

 private:
  int size_;
  std::uint64_t seed_;
};

// Feature vectors for a model that takes a vector (builtin:mlp's 784): unit normals (Box-Muller
// over splitmix64) and a label among 10, 50 000 of them.
class SyntheticFeatures final : public TrainingData {
 public:
  SyntheticFeatures(std::int64_t features, std::uint64_t seed)
      : features_(features), seed_(seed) {}
  std::size_t size() const override { return 50000; }
  std::string describe() const override {
    return "synthetic-features:" + std::to_string(features_) + ": 50000 random vectors of " +
           std::to_string(features_) + " features, 10 classes";
  }
  std::int64_t classes() const override { return 10; }
  bool uint8_images() const override { return false; }
  Example get(std::size_t index, Transfer) const override {
    at::Tensor x = at::empty({features_}, at::kFloat);
    float* out = x.data_ptr<float>();
    std::uint64_t state = mix(seed_ * 0x100000001B3ULL + index);
    const auto unit = [&] {  // (0, 1]
      state = mix(state);
      return (static_cast<double>(state >> 11) + 1.0) / 9007199254740992.0;
    };
    for (std::int64_t i = 0; i < features_; ++i)
      out[i] = static_cast<float>(std::sqrt(-2.0 * std::log(unit())) *
                                  std::cos(6.283185307179586 * unit()));
    const auto label = static_cast<std::int64_t>(mix(state) % 10);
    return {x, at::scalar_tensor(label, at::kLong)};
  }

 private:
  std::int64_t features_;
  std::uint64_t seed_;
};

class ImageFolder final : public TrainingData {
 public:
  ImageFolder(const std::string& root, int size) : root_(root), size_(size) {
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      throw UsageError("images:" + root + ": no such folder (expected one sub-folder of images " +
                       "per class)");
    std::vector<fs::path> classes;
    for (const auto& entry : fs::directory_iterator(root, ec))
      if (entry.is_directory()) classes.push_back(entry.path());
    std::sort(classes.begin(), classes.end());
    for (std::size_t c = 0; c < classes.size(); ++c) {
      std::vector<std::string> files;
      for (const auto& entry : fs::directory_iterator(classes[c], ec))
        if (entry.is_regular_file() && is_image_file(entry.path().string()))
          files.push_back(entry.path().string());
      std::sort(files.begin(), files.end());
      for (auto& f : files) files_.push_back({std::move(f), static_cast<std::int64_t>(c)});
    }
    classes_ = static_cast<std::int64_t>(classes.size());
    if (classes.empty())
      throw UsageError("images:" + root +
                       ": no class sub-folders (expected ROOT/CLASS/IMAGE.jpg, one folder per class)");
    if (files_.empty())
      throw UsageError("images:" + root + ": " + std::to_string(classes.size()) +
                       " class folders but no .jpg, .jpeg or .png files in them");
  }
  std::size_t size() const override { return files_.size(); }
  std::string describe() const override {
    return "images:" + root_ + ": " + std::to_string(files_.size()) + " images, " +
           std::to_string(classes_) + " classes, resized to " + std::to_string(size_) + "x" +
           std::to_string(size_);
  }
  std::int64_t classes() const override { return classes_; }
  bool uint8_images() const override { return true; }
  Example get(std::size_t index, Transfer transfer) const override {
    const auto& [path, label] = files_.at(index);
    const DecodedImage image = decode_image_file(path);
    return {prepare_image(image.rgb.data(), image.height, image.width, size_, transfer),
            at::scalar_tensor(label, at::kLong)};
  }

 private:
  std::string root_;
  int size_;
  std::int64_t classes_ = 0;
  std::vector<std::pair<std::string, std::int64_t>> files_;
};

// torch.save((inputs, targets), FILE): examples are rows; int targets are classes.
class SavedTensors final : public TrainingData {
 public:
  explicit SavedTensors(const std::string& path) : path_(path) {
    std::vector<c10::IValue> values;
    try {
      values = load_inputs_file(path);
    } catch (const ModelError& e) {
      throw UsageError(std::string("tensors:") + e.what());
    }
    if (values.size() != 2)
      throw UsageError("tensors:" + path + ": expected a tuple (inputs, targets), got " +
                       std::to_string(values.size()) + " tensor(s)");
    inputs_ = values[0].toTensor();
    targets_ = values[1].toTensor();
    if (inputs_.dim() < 1 || targets_.dim() < 1 || inputs_.size(0) != targets_.size(0) ||
        inputs_.size(0) == 0)
      throw UsageError("tensors:" + path + ": inputs " + c10::str(inputs_.sizes()) + " and targets " +
                       c10::str(targets_.sizes()) + " must be non-empty with the same first dimension");
    if (!at::isFloatingType(inputs_.scalar_type()))
      throw UsageError("tensors:" + path + ": inputs must be floating point, got " +
                       std::string(c10::toString(inputs_.scalar_type())));
    if (at::isIntegralType(targets_.scalar_type(), false)) {
      targets_ = targets_.to(at::kLong);
      if (targets_.dim() != 1)
        throw UsageError("tensors:" + path + ": class targets must be 1-D, got " + c10::str(targets_.sizes()));
      if (targets_.min().item<std::int64_t>() < 0)
        throw UsageError("tensors:" + path + ": class targets must be >= 0, got " +
                         std::to_string(targets_.min().item<std::int64_t>()));
      classes_ = targets_.max().item<std::int64_t>() + 1;
    } else {
      targets_ = targets_.to(at::kFloat);
    }
    inputs_ = inputs_.to(at::kFloat).contiguous();
  }
  std::size_t size() const override { return static_cast<std::size_t>(inputs_.size(0)); }
  std::string describe() const override {
    return "tensors:" + path_ + ": inputs " + c10::str(inputs_.sizes()) + ", targets " + c10::str(targets_.sizes()) +
           (classes_ ? " (" + std::to_string(classes_) + " classes)" : " (regression)");
  }
  std::int64_t classes() const override { return classes_; }
  bool uint8_images() const override { return false; }
  Example get(std::size_t index, Transfer) const override {
    const auto i = static_cast<std::int64_t>(index);
    return {inputs_[i], targets_[i]};
  }

 private:
  std::string path_;
  at::Tensor inputs_, targets_;
  std::int64_t classes_ = 0;
};

}  // namespace

DataSpec DataSpec::parse(const std::string& source) {
  DataSpec spec;
  spec.source = source;
  if (source == "synthetic-cifar") return spec;
  if (source.rfind("synthetic-features:", 0) == 0) {
    const std::string n = source.substr(19);
    if (!n.empty() && n.size() < 8 && std::all_of(n.begin(), n.end(), ::isdigit) &&
        std::stoi(n) > 0)
      return spec;
  }
  for (const char* prefix : {"images:", "tensors:"})
    if (source.rfind(prefix, 0) == 0 && source.size() > std::string(prefix).size()) return spec;
  throw UsageError("--data '" + source +
                   "': expected synthetic-cifar, synthetic-features:N (N features a sample), "
                   "images:DIR (one sub-folder per class) or tensors:FILE "
                   "(torch.save((inputs, targets), FILE))");
}

std::string default_training_data(const std::string& model) {
  if (model.rfind("builtin:", 0) != 0) return "synthetic-cifar";
  const InputSpec& inputs = find_builtin(model.substr(8)).default_inputs;
  if (inputs.tensors.size() == 1 && inputs.tensors[0].shape.size() == 1 &&
      inputs.tensors[0].shape[0] > 0)
    return "synthetic-features:" + std::to_string(inputs.tensors[0].shape[0]);
  return "synthetic-cifar";
}

std::unique_ptr<TrainingData> open_training_data(const DataSpec& spec) {
  if (spec.image_size < 1 || spec.image_size > 4096)
    throw UsageError("--image-size " + std::to_string(spec.image_size) +
                     ": expected 1 to 4096 pixels");
  DataSpec::parse(spec.source);
  if (spec.source == "synthetic-cifar")
    return std::make_unique<SyntheticCifar>(spec.image_size, spec.seed);
  if (spec.source.rfind("synthetic-features:", 0) == 0)
    return std::make_unique<SyntheticFeatures>(std::stoll(spec.source.substr(19)), spec.seed);
  if (spec.source.rfind("images:", 0) == 0)
    return std::make_unique<ImageFolder>(spec.source.substr(7), spec.image_size);
  return std::make_unique<SavedTensors>(spec.source.substr(8));
}

at::Tensor prepare_image(const std::uint8_t* rgb, int height, int width, int size,
                         Transfer transfer) {
  // from_blob does not own the pixels: the float conversion copies them before they go away.
  at::Tensor hwc = at::from_blob(const_cast<std::uint8_t*>(rgb), {height, width, 3}, at::kByte);
  at::Tensor x = hwc.permute({2, 0, 1}).unsqueeze(0).to(at::kFloat);
  if (height != size || width != size)
    x = torch::nn::functional::interpolate(
        x, torch::nn::functional::InterpolateFuncOptions()
               .size(std::vector<std::int64_t>{size, size})
               .mode(torch::kBilinear)
               .align_corners(false));
  x = x.squeeze(0);
  if (transfer == Transfer::kUint8) return x.round_().clamp_(0, 255).to(at::kByte);
  return x.div_(255.0).sub_(kImageMean).div_(kImageStd).contiguous();
}

at::Tensor normalize_after_copy(const at::Tensor& uint8_batch) {
  return uint8_batch.to(at::kFloat).div_(255.0).sub_(kImageMean).div_(kImageStd);
}

}  // namespace torchperf
