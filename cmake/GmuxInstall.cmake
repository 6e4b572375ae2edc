# make install: libraries, headers, the CLI, gmux.pc and a CMake package.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/gmux DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
install(FILES ${PROJECT_BINARY_DIR}/include/gmux/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gmux)

install(EXPORT gmuxTargets NAMESPACE gmux:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gmux)
configure_package_config_file(cmake/gmuxConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/gmuxConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gmux)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gmuxConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gmuxConfig.cmake ${PROJECT_BINARY_DIR}/gmuxConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gmux)

configure_file(cmake/gmux.pc.in ${PROJECT_BINARY_DIR}/gmux.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gmux.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
