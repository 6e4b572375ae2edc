# Every gmux_* library a target links is a target of this configuration.
# A part that is not built here (libgmux.so and its gmux_shim_core without
# cuda.h, the CUDA parts without nvcc) must not be linked unguarded: CMake
# would take the missing name for a system library (-lgmux_shim_core) and the
# build would fail later, on a header of the part, far from the cause. Called
# once at the end of the top CMakeLists.txt.
function(gmux_check_links_in dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")
      continue()
    endif()
    get_target_property(libs ${t} LINK_LIBRARIES)
    foreach(lib IN LISTS libs)
      if(lib MATCHES "^gmux_" AND NOT TARGET ${lib})
        message(FATAL_ERROR "target ${t} links ${lib}, which this configuration does not "
                            "build (CUDA parts: ${GMUX_HAVE_CUDA_TEXT}; libgmux.so needs "
                            "cuda.h): guard it with if(TARGET ${lib})")
      endif()
    endforeach()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    gmux_check_links_in(${sub})
  endforeach()
endfunction()
gmux_check_links_in(${PROJECT_SOURCE_DIR})
