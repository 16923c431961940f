#include "torchperf/compat/torch_error.h"

#include <gtest/gtest.h>

namespace torchperf::compat {

TEST(TorchErrorTest, KeepsTheInnermostMessageOfATorchScriptTraceback) {
  const std::string what =
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript, serialized code (most recent call last):\n"
      "  File \"code/__torch__/m.py\", line 5, in forward\n"
      "RuntimeError: Given groups=1, weight of size [64, 3, 7, 7], expected input to have 3 "
      "channels\n";
  EXPECT_EQ(concise_error_message(what),
            "Given groups=1, weight of size [64, 3, 7, 7], expected input to have 3 channels");
}

TEST(TorchErrorTest, DropsTheBacktraceOfAPlainC10Error) {
  const std::string what =
      "shape mismatch: [2] vs [3]\nException raised from foo at bar.cpp:10\nframe #0: ...";
  EXPECT_EQ(concise_error_message(what), "shape mismatch: [2] vs [3]");
}

TEST(TorchErrorTest, DropsWhereAnEnforceFailedInLibTorchsSource) {
  EXPECT_EQ(concise_error_message("[enforce fail at inline_container.cc:747] . open file failed "
                                  "because of errno 21 on fopen: Is a directory, file path: x"),
            "open file failed because of errno 21 on fopen: Is a directory, file path: x");
}

TEST(TorchErrorTest, ReturnsASingleLineUnchanged) {
  EXPECT_EQ(concise_error_message("plain"), "plain");
}

}  // namespace torchperf::compat
