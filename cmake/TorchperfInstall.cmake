# Installs the library, headers, CLI and a CMake package so that find_package(torchperf) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
if(TARGET torchperf_fmt)  # LibTorch's {fmt}, compiled (CMakeLists.txt)
  install(TARGETS torchperf_fmt EXPORT torchperfTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(TARGETS torchperf torchperf_process torchperf_page torchperf_advice torchperf_compat torchperf_measure torchperf_feed torchperf_models torchperf_runtime torchperf_config
                torchperf_bench torchperf_worker torchperf_cluster torchperf_sweep torchperf_analysis torchperf_report torchperf_train
                torchperf_lint torchperf_serve torchperf_generate torchperf_trace torchperf_options torchperf_base_options
        EXPORT torchperfTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS torchperf_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/torchperf DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT torchperfTargets NAMESPACE torchperf:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/torchperf)
configure_package_config_file(cmake/torchperfConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/torchperfConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/torchperf)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/torchperfConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/torchperfConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/torchperfConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/torchperf)
