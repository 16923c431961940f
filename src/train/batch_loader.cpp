#include "torchperf/train/batch_loader.h"

#include <torch/data.h>

#include <atomic>
#include <thread>

#include "torchperf/compat/grad_scaling.h"
#include "torchperf/error.h"
#include "torchperf/train/image_codec.h"
#include "torchperf/train/training_data.h"

namespace torchperf {
namespace {

struct Shared {
  std::shared_ptr<const TrainingData> data;
  LoaderOptions options;
  std::thread::id training_thread;
  std::atomic<std::size_t> skipped{0};
};

// What torch::data's loader threads call: decode, resize, normalise and collate one batch.
// Copied into every loader thread; the data are shared and read-only.
class PipelineDataset : public torch::data::datasets::BatchDataset<PipelineDataset, Batch> {
 public:
  explicit PipelineDataset(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  Batch get_batch(c10::ArrayRef<std::size_t> indices) override {
    if (std::this_thread::get_id() != shared_->training_thread)
      compat::use_one_intra_op_thread_in_this_thread();
    std::vector<at::Tensor> inputs, targets;
    inputs.reserve(indices.size());
    targets.reserve(indices.size());
    for (const std::size_t i : indices) {
      try {
        Example e = shared_->data->get(i, shared_->options.transfer);
        inputs.push_back(std::move(e.input));
        targets.push_back(std::move(e.target));
      } catch (const ImageDecodeError&) {
        if (shared_->options.strict) throw;
        shared_->skipped.fetch_add(1);
      }
    }
    if (inputs.empty()) return {};
    Batch batch{at::stack(inputs), at::stack(targets)};
    if (shared_->options.pin_memory) {
      batch.inputs = batch.inputs.pin_memory();
      batch.targets = batch.targets.pin_memory();
    }
    return batch;
  }

  c10::optional<std::size_t> size() const override { return shared_->data->size(); }

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace

LoaderOptions LoaderOptions::from(const TrainingPlan& plan, bool strict) {
  LoaderOptions o;
  o.batch = plan.batch;
  o.workers = plan.workers;
  o.prefetch = plan.prefetch;
  o.pin_memory = plan.pin_memory;
  o.transfer = plan.transfer;
  o.strict = strict;
  return o;
}

struct BatchLoader::Impl {
  using Loader = torch::data::StatelessDataLoader<PipelineDataset,
                                                  torch::data::samplers::RandomSampler>;
  using SequentialLoader = torch::data::StatelessDataLoader<
      PipelineDataset, torch::data::samplers::SequentialSampler>;
  std::shared_ptr<Shared> shared;
  std::unique_ptr<Loader> shuffled;
  std::unique_ptr<SequentialLoader> sequential;
  c10::optional<torch::data::Iterator<Batch>> shuffled_it;
  c10::optional<torch::data::Iterator<Batch>> sequential_it;
  std::size_t epochs = 0;

  template <typename L, typename It>
  c10::optional<Batch> take(L& loader, c10::optional<It>& it) {
    if (!it || *it == loader.end()) {
      it.reset();  // the old iterator must go before begin() resets the loader
      it = loader.begin();
      ++epochs;
      if (*it == loader.end()) return c10::nullopt;
    } else {
      ++*it;
      if (*it == loader.end()) return take(loader, it);
    }
    return **it;
  }
};

BatchLoader::BatchLoader(std::shared_ptr<const TrainingData> data, LoaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (options.batch < 1) throw UsageError("batch: expected a positive integer");
  if (data->size() < static_cast<std::size_t>(options.batch))
    throw UsageError("the data hold " + std::to_string(data->size()) +
                     " examples, fewer than one batch of " + std::to_string(options.batch) +
                     " (use a smaller --batch)");
  auto shared = std::make_shared<Shared>();
  shared->data = std::move(data);
  shared->options = options;
  shared->training_thread = std::this_thread::get_id();
  impl_->shared = shared;
  const auto loader_options =
      torch::data::DataLoaderOptions()
          .batch_size(static_cast<std::size_t>(options.batch))
          .workers(static_cast<std::size_t>(options.workers))
          // With no workers, jobs queued ahead would never be taken (and block the next epoch).
          .max_jobs(static_cast<std::size_t>(options.workers * options.prefetch))
          .enforce_ordering(true)
          .drop_last(true);
  const std::size_t n = shared->data->size();
  if (options.shuffle)
    impl_->shuffled = std::make_unique<Impl::Loader>(
        PipelineDataset(shared), torch::data::samplers::RandomSampler(n), loader_options);
  else
    impl_->sequential = std::make_unique<Impl::SequentialLoader>(
        PipelineDataset(shared), torch::data::samplers::SequentialSampler(n), loader_options);
}

BatchLoader::~BatchLoader() = default;

Batch BatchLoader::next() {
  // A batch whose every example was skipped comes back empty: take the next. An epoch without a
  // single good example ends the run.
  const std::size_t first_epoch = impl_->epochs;
  for (;;) {
    c10::optional<Batch> batch;
    try {
      batch = impl_->shuffled ? impl_->take(*impl_->shuffled, impl_->shuffled_it)
                              : impl_->take(*impl_->sequential, impl_->sequential_it);
    } catch (const torch::data::WorkerException& e) {
      std::rethrow_exception(e.original_exception);
    }
    if (batch && batch->inputs.defined()) return std::move(*batch);
    if (impl_->epochs > first_epoch + 1)
      throw WorkloadError("no example of the data could be read (" +
                          std::to_string(skipped()) + " skipped as corrupt)");
  }
}

std::size_t BatchLoader::skipped() const { return impl_->shared->skipped.load(); }
std::size_t BatchLoader::epochs() const { return impl_->epochs; }
const LoaderOptions& BatchLoader::options() const { return impl_->shared->options; }

}  // namespace torchperf
