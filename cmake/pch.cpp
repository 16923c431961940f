// Anchor for the shared precompiled header (cmake/TorchperfOptions.cmake).
