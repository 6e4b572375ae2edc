# assert() checks: CMake's Release, RelWithDebInfo and MinSizeRel flags carry
# -DNDEBUG, which compiles every assert() out. GMUX_ASSERTS=ON takes NDEBUG
# out of those flags (C and, when enabled, CUDA) for this build folder, and
# keeps the optimisation and debug information of the build type. On by
# default in sanitizer and fuzz builds, whose runs are the ones meant to
# catch a broken invariant; the Makefile also asks for it in `make
# check-asan`, `check-tsan`, `check-clang` and `fuzz`. The default build
# (`make build`, `make check`) and installs keep NDEBUG.
if(GMUX_SANITIZE OR GMUX_FUZZ)
  set(GMUX_ASSERTS_DEFAULT ON)
else()
  set(GMUX_ASSERTS_DEFAULT OFF)
endif()
option(GMUX_ASSERTS "Keep assert() checks (no -DNDEBUG) whatever the build type"
       ${GMUX_ASSERTS_DEFAULT})

if(GMUX_ASSERTS)
  get_property(GMUX_LANGUAGES GLOBAL PROPERTY ENABLED_LANGUAGES)
  foreach(lang IN LISTS GMUX_LANGUAGES)
    foreach(cfg RELEASE RELWITHDEBINFO MINSIZEREL)
      # a directory-scope copy: the cached defaults stay as CMake wrote them
      string(REGEX REPLACE "(^| )[-/]DNDEBUG( |$)" " " CMAKE_${lang}_FLAGS_${cfg}
                           "${CMAKE_${lang}_FLAGS_${cfg}}")
    endforeach()
  endforeach()
endif()
