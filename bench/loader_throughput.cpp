// Images/s of the training input pipeline alone (BatchLoader over synthetic-cifar, no model), to
// set beside PyTorch's DataLoader on the same pipeline (bench/dataloader_python.py, run.sh §5).
// Threads are left as a training run leaves them, as in PyTorch: batches made in the calling
// thread (workers 0) use the default intra-op threads, and each loader thread uses one intra-op
// thread, as PyTorch's worker processes do (torch.set_num_threads(1) in every worker).
#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "torchperf/train/batch_loader.h"
#include "torchperf/train/training_data.h"

namespace {

struct Args {
  int workers = 0;
  long long batch = 32;
  int image_size = 224;
  long long batches = 30;
  long long warmup = 5;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) throw std::invalid_argument(std::string(argv[i]) + ": expected a value");
    const std::string flag = argv[i];
    const long long v = std::stoll(argv[++i]);
    if (flag == "--workers") a.workers = static_cast<int>(v);
    else if (flag == "--batch") a.batch = v;
    else if (flag == "--image-size") a.image_size = static_cast<int>(v);
    else if (flag == "--batches") a.batches = v;
    else if (flag == "--warmup") a.warmup = v;
    else throw std::invalid_argument("unknown flag " + flag);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace torchperf;
  Args a;
  try {
    a = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "torchperf_bench_loader: %s\nusage: torchperf_bench_loader [--workers N] "
                 "[--batch B] [--image-size S] [--batches K] [--warmup W]\n",
                 e.what());
    return 2;
  }
  try {
    DataSpec spec;  // synthetic-cifar, seed 0
    spec.image_size = a.image_size;
    std::unique_ptr<TrainingData> data = open_training_data(spec);
    LoaderOptions options;
    options.batch = a.batch;
    options.workers = a.workers;
    options.prefetch = 2;
    options.transfer = Transfer::kFloat32;
    options.shuffle = true;
    BatchLoader loader(std::shared_ptr<const TrainingData>(std::move(data)), options);
    // Untimed: loader threads start on the first next(), as PyTorch's workers do on iter().
    for (long long i = 0; i < a.warmup; ++i) loader.next();
    long long images = 0;
    const auto start = std::chrono::steady_clock::now();
    for (long long i = 0; i < a.batches; ++i) images += loader.next().inputs.size(0);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(
        "{\"impl\":\"torchperf\",\"workers\":%d,\"batch\":%lld,\"images\":%lld,"
        "\"seconds\":%.6f,\"images_per_s\":%.3f}\n",
        a.workers, a.batch, images, seconds, images / seconds);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torchperf_bench_loader: %s\n", e.what());
    return 1;
  }
}
